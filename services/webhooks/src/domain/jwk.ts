/**
 * The public half of a platform signing key as a JWK (RFC 8037: `kty: OKP`, `crv: Ed25519`, `x`), its kid (the
 * RFC 7638 thumbprint) and its entry in the published key set.
 */
import { createHash } from "node:crypto";

export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
}

export interface JwksEntry extends PublicJwk {
  kid: string;
  use: "sig";
  alg: "EdDSA";
}

/** The public members of an Ed25519 JWK (as `KeyObject.export({format: "jwk"})` gives it), nothing else. */
export function publicJwkOf(jwk: { kty?: unknown; crv?: unknown; x?: unknown }): PublicJwk {
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(jwk.x)) {
    throw new Error("not an Ed25519 public JWK");
  }
  return { kty: "OKP", crv: "Ed25519", x: jwk.x };
}

/** RFC 7638: SHA-256 over the required members in lexicographic order, without whitespace, base64url. */
export function thumbprint(jwk: PublicJwk): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash("sha256").update(canonical, "utf8").digest("base64url");
}

export function jwksEntry(kid: string, jwk: PublicJwk): JwksEntry {
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid, use: "sig", alg: "EdDSA" };
}
