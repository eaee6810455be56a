/**
 * Signing key rotation (`npm run -s admin -- receipts rotate-key`): a new Ed25519 key becomes the one new proofs
 * are signed with; the previous key is retired but stays published in the JWKS, so every proof it signed still
 * verifies. The new private key is sealed with the active sealing key before it reaches the database.
 */
import { withTx, type Sealer, type Sql } from "@treasury/service-kit";
import { generateSigningKey, SERVICE_ALG } from "../signing/jws.ts";
import type { Q } from "../store/db.ts";
import { findActiveKey, insertActiveKey, lockKeys, retireActiveKeys, type SigningKeyRow } from "../store/keys.ts";

/** Binds a sealed private key to its row: copied onto another key's row, it does not open. */
export function sealingContext(kid: string): string {
  return `receipts.signing_keys:${kid}`;
}

async function insertNewKey(q: Q, sealer: Sealer): Promise<SigningKeyRow> {
  const key = await generateSigningKey();
  const sealed = sealer.seal(key.privatePkcs8, sealingContext(key.kid));
  return insertActiveKey(q, { kid: key.kid, alg: SERVICE_ALG, publicJwk: key.publicJwk, sealed });
}

export async function rotateSigningKey(sql: Sql, sealer: Sealer): Promise<{ kid: string; alg: string; retired_kids: string[]; created_at: string }> {
  return withTx(sql, async (tx) => {
    await lockKeys(tx);
    const retired = await retireActiveKeys(tx);
    const row = await insertNewKey(tx, sealer);
    return { kid: row.kid, alg: row.alg, retired_kids: retired, created_at: row.created_at.toISOString() };
  });
}

/** The active key, made on first use when there is none yet (the same lock as rotation, so only one is made). */
export async function ensureActiveKey(sql: Sql, sealer: Sealer): Promise<SigningKeyRow> {
  const active = await findActiveKey(sql);
  if (active !== undefined) return active;
  return withTx(sql, async (tx) => {
    await lockKeys(tx);
    return (await findActiveKey(tx)) ?? (await insertNewKey(tx, sealer));
  });
}
