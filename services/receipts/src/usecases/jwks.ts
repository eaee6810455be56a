/** getReceiptJwks: every public key the service signs or signed proofs with (RFC 7517 JWK Set). No API key. */
import type { SigningKeys } from "./ports.ts";

export async function jwks(keyring: SigningKeys): Promise<{ keys: Array<Record<string, string>> }> {
  const keys = await keyring.allPublicKeys();
  return { keys: keys.map((k) => ({ ...k.jwk, kid: k.kid, alg: k.alg, use: "sig" })) };
}
