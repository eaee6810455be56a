// Proves counterparty signatures and verification through real RPC, with the ledger and payments as real processes
// on real PostgreSQL and NATS: signatures verified before they are stored, once per key_id, bad input refused with a
// precise code, and verification by receipt or by a bare hash with a signature and a key.
import { CompactSign, exportJWK, generateKeyPair, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, newOrg, proofHelpers, startHarness, type Harness } from "./test-support.ts";

let h: Harness;
const { receiptOf, proofOf, verify } = proofHelpers(() => h);

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function counterparty(alg: "ES256" | "EdDSA") {
  const { publicKey, privateKey } = await generateKeyPair(alg === "ES256" ? "ES256" : "Ed25519", { extractable: true });
  const jwk = await exportJWK(publicKey);
  const sign = (text: string, detached = false) =>
    new CompactSign(new TextEncoder().encode(text))
      .setProtectedHeader({ alg })
      .sign(privateKey)
      .then((jws) => {
        const [head, , sig] = jws.split(".");
        return detached ? `${head}..${sig}` : jws;
      });
  return { jwk, privateJwk: await exportJWK(privateKey), sign };
}

async function signatureCount(): Promise<number> {
  const [row] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from receipts.proof_signatures`;
  return Number(row?.n);
}

describe("counterparty signatures", () => {
  it("are verified before they are stored (ES256 and EdDSA, attached and detached), once per key_id", async () => {
    // Proves 201 with the stored signature, the proof listing it, verify checking it, and 409 for a key_id again.
    const auth = authFor(newOrg());
    const { receiptId } = await receiptOf(auth);
    const proof = await proofOf(auth, receiptId);
    const es = await counterparty("ES256");
    const ed = await counterparty("EdDSA");
    const r1 = await h.ok("submitReceiptProofSignature", auth, {
      params: { receipt_id: receiptId },
      body: {
        key_id: "platform-es-1",
        signature: await es.sign(proof.receipt_hash),
        public_key_jwk: es.jwk,
        signer_type: "platform",
        signer_id: "acme",
        signed_payload: proof.receipt_hash,
      },
    });
    expect(r1.status).toBe(201);
    expect(r1.body["signature"]).toMatchObject({
      key_id: "platform-es-1",
      signer_type: "platform",
      signer_id: "acme",
      alg: "ES256",
      public_key_jwk: { kty: "EC", crv: "P-256", x: es.jwk.x, y: es.jwk.y },
      signed_payload: proof.receipt_hash,
    });
    await h.ok("submitReceiptProofSignature", auth, {
      params: { receipt_id: receiptId },
      body: { key_id: "platform-ed-1", signature: await ed.sign(proof.receipt_hash, true), public_key_jwk: ed.jwk },
    });
    const listed = await proofOf(auth, receiptId);
    expect(listed.signatures.map((x) => [x.key_id, x.alg, x.signer_type])).toEqual([
      ["platform-es-1", "ES256", "platform"],
      ["platform-ed-1", "EdDSA", "platform"],
    ]);
    expect({ ...listed, signatures: [] }).toEqual({ ...proof, signatures: [] });
    const v = await verify(auth, { receipt_id: receiptId });
    expect(v).toMatchObject({
      valid: true,
      checks: {
        receipt_hash: true,
        chain: true,
        service_signature: true,
        counterparty_signatures: [
          { key_id: "platform-es-1", valid: true },
          { key_id: "platform-ed-1", valid: true },
        ],
      },
    });

    const before = await signatureCount();
    const dup = await h.err("submitReceiptProofSignature", auth, {
      params: { receipt_id: receiptId },
      body: { key_id: "platform-es-1", signature: await es.sign(proof.receipt_hash), public_key_jwk: es.jwk },
    });
    expect(dup.code).toBe("duplicate_signature");
    expect((dup.extra?.["signature"] as { key_id: string }).key_id).toBe("platform-es-1");
    expect(await signatureCount()).toBe(before);
  });

  it("bad input on every field answers a precise code and stores nothing", async () => {
    // Proves wrong keys, wrong payloads, forged or malformed signatures and unknown receipts are refused.
    const auth = authFor(newOrg());
    const { receiptId } = await receiptOf(auth);
    const proof = await proofOf(auth, receiptId);
    const es = await counterparty("ES256");
    const other = await counterparty("ES256");
    const good = await es.sign(proof.receipt_hash);
    const before = await signatureCount();
    const cases: Array<[Record<string, unknown>, string, string?]> = [
      [{ signature: good, public_key_jwk: es.jwk }, "validation_error", "key_id"],
      [{ key_id: "", signature: good, public_key_jwk: es.jwk }, "validation_error", "key_id"],
      [{ key_id: "k", public_key_jwk: es.jwk }, "validation_error", "signature"],
      [{ key_id: "k", signature: "not a jws", public_key_jwk: es.jwk }, "validation_error", "signature"],
      [{ key_id: "k", signature: good }, "validation_error", "public_key_jwk"],
      [{ key_id: "k", signature: good, public_key_jwk: "jwk" }, "validation_error", "public_key_jwk"],
      [{ key_id: "k", signature: good, public_key_jwk: es.jwk, signer_type: "buyer" }, "validation_error", "signer_type"],
      [{ key_id: "k", signature: good, public_key_jwk: es.jwk, signer_id: 5 }, "validation_error", "signer_id"],
      [{ key_id: "k", signature: good, public_key_jwk: es.privateJwk }, "invalid_public_key", "public_key_jwk"],
      [{ key_id: "k", signature: good, public_key_jwk: { kty: "RSA", n: "abc", e: "AQAB" } }, "invalid_public_key", "public_key_jwk"],
      [{ key_id: "k", signature: good, public_key_jwk: { ...es.jwk, crv: "P-384" } }, "invalid_public_key", "public_key_jwk"],
      [{ key_id: "k", signature: good, public_key_jwk: es.jwk, signed_payload: "something else" }, "signed_payload_mismatch"],
      [{ key_id: "k", signature: good, public_key_jwk: other.jwk }, "invalid_signature"],
      [{ key_id: "k", signature: await es.sign("f".repeat(64)), public_key_jwk: es.jwk }, "invalid_signature"],
      [{ key_id: "k", signature: await es.sign(proof.receipt_hash.toUpperCase(), true), public_key_jwk: es.jwk }, "invalid_signature"],
      [{ key_id: "k", signature: `${good.slice(0, -4)}AAAA`, public_key_jwk: es.jwk }, "invalid_signature"],
    ];
    for (const [body, code, path] of cases) {
      const e = await h.err("submitReceiptProofSignature", auth, { params: { receipt_id: receiptId }, body });
      expect(e.code, JSON.stringify(body).slice(0, 100)).toBe(code);
      if (path !== undefined)
        expect(
          e.details?.map((d) => d.path),
          JSON.stringify(body).slice(0, 100),
        ).toContain(path);
    }
    const unknown = await h.err("submitReceiptProofSignature", auth, {
      params: { receipt_id: "rcpt_nothere" },
      body: { key_id: "k", signature: good, public_key_jwk: es.jwk },
    });
    expect(unknown.code).toBe("receipt_not_found");
    const live = await h.err(
      "submitReceiptProofSignature",
      { ...auth, livemode: true },
      { params: { receipt_id: receiptId }, body: { key_id: "k", signature: good, public_key_jwk: es.jwk } },
    );
    expect(live.code).toBe("receipt_not_found");
    expect(await signatureCount()).toBe(before);
  });
});

describe("verifyReceiptProof", () => {
  it("verifies a bare hash with a signature and a public key, and reports unknown or wrong hashes as invalid", async () => {
    // Proves the hash + signature + JWK form, the service-JWS form, and that nothing unknown verifies.
    const auth = authFor(newOrg());
    const { receiptId } = await receiptOf(auth);
    const proof = await proofOf(auth, receiptId);
    const ed = await counterparty("EdDSA");
    const sig = await ed.sign(proof.receipt_hash);
    const bare = await verify(auth, {
      receipt_hash: proof.receipt_hash,
      signature: sig,
      public_key_jwk: { ...ed.jwk, kid: "ed-9" },
      signed_payload: proof.receipt_hash,
    });
    expect(bare).toMatchObject({
      valid: true,
      checks: { receipt_hash: true, chain: true, service_signature: true, counterparty_signatures: [{ key_id: "ed-9", valid: true }] },
    });
    const withService = await verify(auth, { receipt_hash: proof.receipt_hash, signature: proof.service_signature.jws });
    expect(withService.valid).toBe(true);
    const wrongKey = await verify(auth, { receipt_hash: proof.receipt_hash, signature: sig, public_key_jwk: (await counterparty("EdDSA")).jwk });
    expect(wrongKey.valid).toBe(false);
    expect(wrongKey.checks.counterparty_signatures).toEqual([{ key_id: "provided", valid: false }]);
    const otherService = await verify(auth, { receipt_hash: proof.receipt_hash, signature: sig });
    expect(otherService.checks.service_signature).toBe(false);

    const unknownHash = "a".repeat(64);
    const unknown = await verify(auth, { receipt_hash: unknownHash, signature: await ed.sign(unknownHash), public_key_jwk: ed.jwk });
    expect(unknown).toMatchObject({
      valid: false,
      checks: { receipt_hash: false, chain: false, service_signature: false, counterparty_signatures: [{ key_id: "provided", valid: true }] },
    });
    const mismatch = await verify(auth, { receipt_id: receiptId, receipt_hash: unknownHash });
    expect(mismatch.checks.receipt_hash).toBe(false);
    expect(mismatch.valid).toBe(false);
    // Another environment does not see this proof's hash.
    expect((await verify({ ...auth, livemode: true }, { receipt_hash: proof.receipt_hash })).checks.receipt_hash).toBe(false);
  });

  it("bad input answers a precise code", async () => {
    // Proves missing targets, malformed hashes, ids and keys are 4xx codes.
    const auth = authFor(newOrg());
    const ed = await counterparty("EdDSA");
    const cases: Array<[Record<string, unknown>, string, string?]> = [
      [{}, "validation_error", "receipt_id"],
      [{ signature: "a.b.c" }, "validation_error", "receipt_id"],
      [{ receipt_hash: "xyz" }, "validation_error", "receipt_hash"],
      [{ receipt_hash: "A".repeat(64) }, "validation_error", "receipt_hash"],
      [{ receipt_id: "receipt-1" }, "validation_error", "receipt_id"],
      [{ receipt_hash: "a".repeat(64), public_key_jwk: ed.jwk }, "validation_error", "signature"],
      [{ receipt_hash: "a".repeat(64), signature: "a.b.c", public_key_jwk: ed.privateJwk as JWK }, "invalid_public_key", "public_key_jwk"],
      [{ receipt_hash: "a".repeat(64), signed_payload: 12 }, "validation_error", "signed_payload"],
      [{ receipt_id: "rcpt_nothere" }, "receipt_not_found"],
    ];
    for (const [body, code, path] of cases) {
      const e = await h.err("verifyReceiptProof", auth, { body });
      expect(e.code, JSON.stringify(body).slice(0, 100)).toBe(code);
      if (path !== undefined)
        expect(
          e.details?.map((d) => d.path),
          JSON.stringify(body).slice(0, 100),
        ).toContain(path);
    }
  });
});
