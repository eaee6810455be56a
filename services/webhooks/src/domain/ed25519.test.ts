// Proves the pure parts of Ed25519 signing: the kid is the RFC 7638 thumbprint (RFC 8037's own example), the JWK
// keeps only public members, `v1a` signatures verify with node:crypto and name their keys in order, and the
// fan-out's spliced body is byte for byte the body built for that endpoint.
import { createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { webhookBody, webhookBodyParts } from "./events.ts";
import { jwksEntry, publicJwkOf, thumbprint } from "./jwk.ts";
import { attemptHeaders } from "./signing.ts";

describe("ed25519", () => {
  it("names a key by its RFC 7638 thumbprint (RFC 8037, appendix A.3)", () => {
    const jwk = publicJwkOf({ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" });
    expect(thumbprint(jwk)).toBe("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
  });

  it("publishes only the public members, and refuses anything that is not an Ed25519 public key", () => {
    const { privateKey } = generateKeyPairSync("ed25519");
    const exported = privateKey.export({ format: "jwk" });
    expect(exported.d).toBeDefined();
    const jwk = publicJwkOf(exported);
    expect(Object.keys(jwksEntry("k1", jwk)).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
    expect(() => publicJwkOf({ kty: "EC", crv: "P-256", x: jwk.x })).toThrow();
    expect(() => publicJwkOf({ kty: "OKP", crv: "Ed25519", x: "short" })).toThrow();
  });

  it("signs v1a with each key in order, names the kids in the same order, and node:crypto verifies each", () => {
    const keys = ["new", "old"].map((kid) => ({ kid, ...generateKeyPairSync("ed25519") }));
    const body = webhookBody({ id: "evt_1", type: "payout.failed", created_at: "2026-01-01T00:00:00.000Z", livemode: true, sequence: 9, data: {} }, "we_a");
    const h = attemptHeaders(
      { id: "whd_1", event_type: "payout.failed", attempts: 1, body },
      { scheme: "ed25519", keys: keys.map((k) => ({ kid: k.kid, privateKey: k.privateKey })) },
      1_700_000_000,
    );
    expect(h["webhook-signature-kid"]).toBe("new old");
    const sigs = String(h["webhook-signature"]).split(" ");
    expect(sigs.map((s) => s.slice(0, 4))).toEqual(["v1a,", "v1a,"]);
    const message = Buffer.from(`whd_1.1700000000.${body}`);
    keys.forEach((k, i) => {
      const pub = createPublicKey({ key: { ...publicJwkOf(k.publicKey.export({ format: "jwk" })) }, format: "jwk" });
      expect(verify(null, message, pub, Buffer.from(String(sigs[i]).slice(4), "base64"))).toBe(true);
      expect(verify(null, Buffer.from(`whd_1.1700000001.${body}`), pub, Buffer.from(String(sigs[i]).slice(4), "base64"))).toBe(false);
    });
    expect(() => attemptHeaders({ id: "whd_1", event_type: "x", attempts: 1, body }, { scheme: "ed25519", keys: [] }, 1)).toThrow();
  });

  it("the fan-out's spliced body equals the body built for the endpoint, even when the data mentions endpoint_id", () => {
    const evt = {
      id: "evt_2",
      type: "sandbox.test",
      created_at: "2026-01-01T00:00:00.000Z",
      livemode: false,
      sequence: 1,
      data: { endpoint_id: "we_SPLICE", n: '"' },
    };
    const { before, after } = webhookBodyParts(evt);
    expect(before + "we_abc123" + after).toBe(webhookBody(evt, "we_abc123"));
    expect(JSON.parse(before + "we_abc123" + after)).toMatchObject({ endpoint_id: "we_abc123", data: { endpoint_id: "we_SPLICE" } });
  });
});
