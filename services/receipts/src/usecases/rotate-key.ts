/**
 * Signing key rotation (`npm run -s admin -- receipts rotate-key`): a new Ed25519 key becomes the one new proofs
 * are signed with; the previous key is retired but stays published in the JWKS, so every proof it signed still
 * verifies. The new private key is sealed with the active sealing key before it reaches the database.
 */
import type { Sealer } from "@treasury/service-kit";
import { generateSigningKey, SERVICE_ALG } from "../signing/jws.ts";
import type { KeyStore, NewSigningKeyRow, SigningKeyRow } from "./ports.ts";

/** Binds a sealed private key to its row: copied onto another key's row, it does not open. */
export function sealingContext(kid: string): string {
  return `receipts.signing_keys:${kid}`;
}

/** A new key with its private half sealed, as it is stored. */
async function sealedNewKey(sealer: Sealer): Promise<NewSigningKeyRow> {
  const key = await generateSigningKey();
  const sealed = sealer.seal(key.privatePkcs8, sealingContext(key.kid));
  return { kid: key.kid, alg: SERVICE_ALG, publicJwk: key.publicJwk, sealed };
}

export async function rotateSigningKey(keys: KeyStore, sealer: Sealer): Promise<{ kid: string; alg: string; retired_kids: string[]; created_at: string }> {
  const { row, retiredKids } = await keys.rotate(() => sealedNewKey(sealer));
  return { kid: row.kid, alg: row.alg, retired_kids: retiredKids, created_at: row.created_at.toISOString() };
}

/** The active key, made on first use when there is none yet (the same lock as rotation, so only one is made). */
export async function ensureActiveKey(keys: KeyStore, sealer: Sealer): Promise<SigningKeyRow> {
  return (await keys.findActive()) ?? (await keys.ensureActive(() => sealedNewKey(sealer)));
}
