/** SQL of the service's signing keys (receipts.signing_keys; the KeyStore port). */
import { withTx } from "@treasury/service-kit";
import type { KeyStore, NewSigningKeyRow, PublicKeyRow, SigningKeyRow } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

/** Rotation and the first key's creation take this lock, so two never race to make the active key. */
async function lockKeys(q: Q): Promise<void> {
  await q`select pg_advisory_xact_lock(hashtext('treasury.receipts.signing_keys'))`;
}

async function findActiveKey(q: Q): Promise<SigningKeyRow | undefined> {
  const [row] = await q<SigningKeyRow[]>`select * from receipts.signing_keys where status = 'active'`;
  return row;
}

async function retireActiveKeys(q: Q): Promise<string[]> {
  const rows = await q<{ kid: string }[]>`
    update receipts.signing_keys set status = 'retired', retired_at = now() where status = 'active' returning kid`;
  return rows.map((r) => r.kid);
}

async function insertActiveKey(q: Q, k: NewSigningKeyRow): Promise<SigningKeyRow> {
  const [row] = await q<SigningKeyRow[]>`
    insert into receipts.signing_keys (kid, alg, public_jwk, sealed_private_key, status)
    values (${k.kid}, ${k.alg}, ${q.json(k.publicJwk as Record<string, string>)}, ${k.sealed}, 'active')
    returning *`;
  if (row === undefined) throw new Error("signing key insert returned no row");
  return row;
}

export function pgKeyStore(sql: Sql): KeyStore {
  return {
    findActive: () => findActiveKey(sql),
    ensureActive: (make) =>
      withTx(sql, async (tx) => {
        await lockKeys(tx);
        return (await findActiveKey(tx)) ?? (await insertActiveKey(tx, await make()));
      }),
    rotate: (make) =>
      withTx(sql, async (tx) => {
        await lockKeys(tx);
        const retiredKids = await retireActiveKeys(tx);
        const row = await insertActiveKey(tx, await make());
        return { row, retiredKids };
      }),
    listPublic: () => sql<PublicKeyRow[]>`select kid, alg, public_jwk, status, created_at, retired_at from receipts.signing_keys order by created_at desc, kid`,
    findPublic: async (kid) => {
      const [row] = await sql<PublicKeyRow[]>`select kid, alg, public_jwk, status, created_at, retired_at from receipts.signing_keys where kid = ${kid}`;
      return row;
    },
  };
}
