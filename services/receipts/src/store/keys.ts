/** SQL of the service's signing keys (receipts.signing_keys). */
import type { Q } from "./db.ts";

export interface SigningKeyRow {
  kid: string;
  alg: string;
  public_jwk: Record<string, unknown>;
  sealed_private_key: string;
  status: "active" | "retired";
  created_at: Date;
  retired_at: Date | null;
}

export type PublicKeyRow = Omit<SigningKeyRow, "sealed_private_key">;

/** Rotation and the first key's creation take this lock, so two never race to make the active key. */
export async function lockKeys(q: Q): Promise<void> {
  await q`select pg_advisory_xact_lock(hashtext('treasury.receipts.signing_keys'))`;
}

export async function findActiveKey(q: Q): Promise<SigningKeyRow | undefined> {
  const [row] = await q<SigningKeyRow[]>`select * from receipts.signing_keys where status = 'active'`;
  return row;
}

export async function retireActiveKeys(q: Q): Promise<string[]> {
  const rows = await q<{ kid: string }[]>`
    update receipts.signing_keys set status = 'retired', retired_at = now() where status = 'active' returning kid`;
  return rows.map((r) => r.kid);
}

export async function insertActiveKey(q: Q, k: { kid: string; alg: string; publicJwk: Record<string, unknown>; sealed: string }): Promise<SigningKeyRow> {
  const [row] = await q<SigningKeyRow[]>`
    insert into receipts.signing_keys (kid, alg, public_jwk, sealed_private_key, status)
    values (${k.kid}, ${k.alg}, ${q.json(k.publicJwk as Record<string, string>)}, ${k.sealed}, 'active')
    returning *`;
  if (row === undefined) throw new Error("signing key insert returned no row");
  return row;
}

/** Every key, newest first: the published JWKS (retired keys stay so their proofs still verify). */
export async function listPublicKeys(q: Q): Promise<PublicKeyRow[]> {
  return q<PublicKeyRow[]>`select kid, alg, public_jwk, status, created_at, retired_at from receipts.signing_keys order by created_at desc, kid`;
}

export async function findPublicKey(q: Q, kid: string): Promise<PublicKeyRow | undefined> {
  const [row] = await q<PublicKeyRow[]>`select kid, alg, public_jwk, status, created_at, retired_at from receipts.signing_keys where kid = ${kid}`;
  return row;
}
