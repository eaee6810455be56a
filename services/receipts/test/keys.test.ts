// Proves the signing keys over in-memory ports: the first key is made once however many proofs ask at the same
// time, sealed at rest; rotation makes a new active key and retires the old one, which stays published so its
// proofs still verify; a key the configured sealing keys cannot open is service_unavailable, never logged.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { Tenant } from "@treasury/contracts";
import { pino } from "pino";
import { proofOf } from "../src/usecases/get-proof.ts";
import { jwks } from "../src/usecases/jwks.ts";
import { Keyring } from "../src/usecases/keyring.ts";
import { rotateSigningKey, sealingContext } from "../src/usecases/rotate-key.ts";
import { verifyProof } from "../src/usecases/verify-proof.ts";
import { fakes, newSealer, transactionRecord, type Fakes } from "./fakes.ts";

const tenant: Tenant = { orgId: "org_unit", livemode: false };

async function proved(f: Fakes) {
  const t = transactionRecord(tenant);
  f.reads.records.set(t.id, t);
  return proofOf(f.deps, tenant, t.id);
}

describe("signing keys", () => {
  it("the first key is made once, on the first proof, sealed and bound to its kid", async () => {
    const f = fakes();
    await Promise.all(Array.from({ length: 4 }, () => proved(f)));
    expect(f.keys.rows).toHaveLength(1);
    const [key] = f.keys.rows;
    expect(key).toMatchObject({ status: "active", alg: "EdDSA", public_jwk: { kty: "OKP", crv: "Ed25519" } });
    expect(key!.sealed_private_key).not.toContain("PRIVATE KEY");
    expect(f.sealer.open(key!.sealed_private_key, sealingContext(key!.kid))).toContain("PRIVATE KEY");
    expect(() => f.sealer.open(key!.sealed_private_key, sealingContext("another-kid"))).toThrow();
  });

  it("rotation: new proofs use the new key, old proofs still verify, the JWKS publishes both", async () => {
    const f = fakes();
    const before = await proved(f);
    const rotated = await rotateSigningKey(f.keys, f.sealer);
    expect(rotated.retired_kids).toEqual([before.signature_kid]);
    expect(rotated.kid).not.toBe(before.signature_kid);
    expect(f.keys.rows.map((k) => [k.kid, k.status])).toEqual([
      [before.signature_kid, "retired"],
      [rotated.kid, "active"],
    ]);
    const after = await proved(f);
    expect(after.signature_kid).toBe(rotated.kid);
    const published = await jwks(f.deps.keyring);
    expect(published.keys.map((k) => k.kid)).toEqual([rotated.kid, before.signature_kid]);
    for (const k of published.keys) expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    for (const p of [before, after]) expect((await verifyProof(f.deps, tenant, { receipt_hash: p.receipt_hash }))["valid"]).toBe(true);
  });

  it("a key the configured sealing keys cannot open is service_unavailable, and nothing secret is logged", async () => {
    const f = fakes();
    const made = await proved(f);
    const lines: string[] = [];
    const log = pino({ level: "trace" }, new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }));
    const other = new Keyring(f.keys, newSealer("r2"), log);
    await expect(other.signingKey()).rejects.toMatchObject({ code: "service_unavailable" });
    // Reading and verifying need no private key.
    expect(await other.publicKey(made.signature_kid)).toEqual(f.keys.rows[0]!.public_jwk);
    const logged = lines.join("");
    expect(logged).toContain("cannot be opened with the configured sealing keys");
    expect(logged).toContain(made.signature_kid);
    expect(logged).not.toContain(f.keys.rows[0]!.sealed_private_key);
    expect(logged).not.toMatch(/PRIVATE KEY|"d":/);
  });
});
