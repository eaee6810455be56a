/** SQL of the platform's Ed25519 signing keys (webhooks.signing_keys; the SigningKeyStore port). */
import { withTx, type Sql, type Tx } from "@treasury/service-kit";
import type { NewSigningKey, SigningKeyRow, SigningKeyStore, SigningKeyTx } from "../usecases/ports.ts";

type Db = Sql | Tx;

const COLUMNS = "kid, public_jwk, sealed_private_key, sealing_key_id, status, created_at, retired_at, expires_at";

/** Keys whose overlap has ended leave the key set and lose their private half. */
async function expireEnded(db: Db): Promise<string[]> {
  const rows = await db<{ kid: string }[]>`
    update webhooks.signing_keys set status = 'expired', sealed_private_key = null, sealing_key_id = null
    where status = 'retiring' and expires_at <= now() returning kid`;
  return rows.map((r) => r.kid);
}

/** The statements of one key transaction (rotation, the first key): the caller's, so an audit row can join it. */
export function signingKeyTx(tx: Tx): SigningKeyTx {
  return {
    // Rotation and the first key's creation take this lock, so two never race to make the active key.
    lock: async () => void (await tx`select pg_advisory_xact_lock(hashtext('treasury.webhooks.signing_keys'))`),
    active: async () => {
      const [row] = await tx<SigningKeyRow[]>`select ${tx.unsafe(COLUMNS)} from webhooks.signing_keys where status = 'active'`;
      return row;
    },
    retireActive: async (overlapMs) => {
      // Keys already retiring keep their end unless the new overlap ends sooner (0 drops every previous key now).
      const rows = await tx<{ kid: string; expires_at: Date }[]>`
        update webhooks.signing_keys set
          status = 'retiring',
          retired_at = coalesce(retired_at, now()),
          expires_at = least(coalesce(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => ${overlapMs / 1000}))
        where status in ('active', 'retiring')
        returning kid, expires_at`;
      const expired = new Set(await expireEnded(tx));
      return rows.filter((r) => !expired.has(r.kid)).map((r) => ({ kid: r.kid, expires_at: r.expires_at }));
    },
    insertActive: async (k: NewSigningKey) => {
      const [row] = await tx<SigningKeyRow[]>`
        insert into webhooks.signing_keys (kid, public_jwk, sealed_private_key, sealing_key_id, status)
        values (${k.kid}, ${tx.json({ ...k.publicJwk })}, ${k.sealed}, ${k.sealingKeyId}, 'active')
        returning ${tx.unsafe(COLUMNS)}`;
      if (row === undefined) throw new Error("signing key insert returned no row");
      return row;
    },
  };
}

export function pgSigningKeyStore(sql: Sql): SigningKeyStore {
  return {
    transaction: (fn) => withTx(sql, (tx) => fn(signingKeyTx(tx))),
    current: () =>
      sql<SigningKeyRow[]>`
        select ${sql.unsafe(COLUMNS)} from webhooks.signing_keys
        where status = 'active' or (status = 'retiring' and expires_at > now())
        order by (status = 'active') desc, created_at desc, kid`,
    expire: () => expireEnded(sql),
    reseal: (retiredSealingKeyIds, limit, reseal) =>
      withTx(sql, async (tx) => {
        const rows = await tx<SigningKeyRow[]>`
          select ${tx.unsafe(COLUMNS)} from webhooks.signing_keys
          where sealed_private_key is not null and sealing_key_id = any(${retiredSealingKeyIds as string[]}::text[])
          order by kid limit ${limit} for update skip locked`;
        let moved = 0;
        for (const row of rows) {
          const sealed = reseal(row);
          if (sealed === undefined) continue;
          await tx`update webhooks.signing_keys set sealed_private_key = ${sealed.sealed}, sealing_key_id = ${sealed.sealingKeyId} where kid = ${row.kid}`;
          moved += 1;
        }
        return moved;
      }),
  };
}
