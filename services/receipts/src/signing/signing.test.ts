// Proves the service's Ed25519 keys sign and verify only what they signed, and that counterparty keys are
// accepted only as public P-256 or Ed25519 JWKs.
import { describe, expect, it } from "vitest";
import { generateSigningKey, importPrivateKey, publicJwkOf, signCompact, verifiesOver } from "./jws.ts";

describe("keys and signatures", () => {
  it("signs with a new Ed25519 key whose kid is its thumbprint, and verifies only the signed text", async () => {
    // Proves a signature holds for its own text only, and bad input never throws.
    const key = await generateSigningKey();
    expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(key.publicJwk).toEqual({ kty: "OKP", crv: "Ed25519", x: expect.any(String) });
    const jws = await signCompact(await importPrivateKey(key.privatePkcs8), key.kid, "hello");
    expect(await verifiesOver(jws, { jwk: key.publicJwk, alg: "EdDSA" }, "hello")).toBe(true);
    expect(await verifiesOver(jws, { jwk: key.publicJwk, alg: "EdDSA" }, "hellO")).toBe(false);
    expect(await verifiesOver("garbage", { jwk: key.publicJwk, alg: "EdDSA" }, "hello")).toBe(false);
  });

  it("takes public P-256 and Ed25519 JWKs only", () => {
    // Proves private members, other curves and other key types are refused.
    const x = "A".repeat(43);
    expect(publicJwkOf({ kty: "OKP", crv: "Ed25519", x, kid: "k", use: "sig" })).toEqual({ jwk: { kty: "OKP", crv: "Ed25519", x }, alg: "EdDSA" });
    expect(publicJwkOf({ kty: "EC", crv: "P-256", x, y: x })).toEqual({ jwk: { kty: "EC", crv: "P-256", x, y: x }, alg: "ES256" });
    for (const bad of [
      { kty: "OKP", crv: "Ed25519", x, d: x },
      { kty: "EC", crv: "P-256", x },
      { kty: "OKP", crv: "X25519", x },
      { kty: "RSA", n: x, e: "AQAB" },
      { kty: "OKP", crv: "Ed25519", x: "short" },
      {},
    ]) {
      expect(publicJwkOf(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });
});
