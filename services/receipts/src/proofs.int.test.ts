// Proves signed ledger proofs through real RPC, with the ledger and payments as real processes on real PostgreSQL
// and NATS: made on first fetch and identical afterwards, one per transaction under concurrent first fetches,
// consecutive sequences under concurrent proofs of one org, verifiable by an outsider from the public JSON
// alone, and the signing keys: rotation, sealed at rest, never logged.
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgKeyStore } from "./store/keys.ts";
import { getTransactionProof } from "./usecases/get-proof.ts";
import { Keyring } from "./usecases/keyring.ts";
import { rotateSigningKey } from "./usecases/rotate-key.ts";
import { authFor, newOrg, newSealingKeys, proofHelpers, sealerFor, startHarness, type Harness, type Proof } from "./test-support.ts";

let h: Harness;
const { receiptOf, proofOf, jwks, verify } = proofHelpers(() => h);

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe("proofs", () => {
  it("are made on first fetch and identical on every later fetch, by receipt or by transaction", async () => {
    // Proves the proof's shape, that the payload is the ledger's record (RFC 8785) and that fetches never change it.
    const auth = authFor(newOrg());
    const { receiptId, saleTransactionId } = await receiptOf(auth);
    const first = await proofOf(auth, receiptId);
    expect(first).toMatchObject({
      receipt_id: receiptId,
      transaction_id: saleTransactionId,
      chain: { sequence: 1, previous_hash: "0".repeat(64) },
      signatures: [],
    });
    expect(first.receipt_hash).toBe(createHash("sha256").update(first.canonical_payload).digest("hex"));
    expect(first.service_signature.alg).toBe("EdDSA");
    const payload = JSON.parse(first.canonical_payload) as {
      format: string;
      transaction: { id: string; amount: number; entries: Array<{ amount: number; entry_type: string }>; org_id: string; livemode: boolean };
    };
    expect(canonicalize(payload)).toBe(first.canonical_payload);
    expect(payload.format).toBe("treasury.ledger_transaction.v1");
    expect(payload.transaction).toMatchObject({ id: saleTransactionId, org_id: auth.org_id, livemode: false, amount: 4_999 });
    const debits = payload.transaction.entries.filter((e) => e.entry_type === "debit").reduce((a, e) => a + e.amount, 0);
    const credits = payload.transaction.entries.filter((e) => e.entry_type === "credit").reduce((a, e) => a + e.amount, 0);
    expect(debits).toBe(credits);
    expect(debits).toBeGreaterThan(0);
    expect(await proofOf(auth, receiptId)).toEqual(first);
    const byTxn = (await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: saleTransactionId } })).body["proof"];
    expect(byTxn).toEqual(first);
  });

  it("are made for any transaction, and only for the caller's org and environment", async () => {
    // Proves a non-sale transaction gets a proof without a receipt, and unknown, malformed or foreign ids are 404.
    const auth = authFor(newOrg());
    const adj = await h.adjustment(auth);
    const proof = (await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: adj } })).body["proof"] as Proof;
    expect(proof).toMatchObject({ receipt_id: null, transaction_id: adj, chain: { sequence: 1 } });
    const live = { ...auth, livemode: true };
    for (const [who, id] of [
      [live, adj],
      [authFor(newOrg()), adj],
      [auth, "txn_missing00000000000000"],
      [auth, "bad id"],
    ] as const) {
      expect((await h.err("getTransactionReceiptProof", who, { params: { transaction_id: id } })).code).toBe("transaction_not_found");
    }
    const { receiptId } = await receiptOf(auth);
    expect((await h.err("getReceiptProof", live, { params: { receipt_id: receiptId } })).code).toBe("receipt_not_found");
    expect((await h.err("getReceiptProof", auth, { params: { receipt_id: "rcpt_nothere" } })).code).toBe("receipt_not_found");
  });

  it("concurrent first fetches make one proof; concurrent proofs of one org get consecutive sequences", async () => {
    // Proves no duplicate proof for one transaction and no gap or fork in a chain under concurrency.
    const auth = authFor(newOrg());
    const { receiptId, saleTransactionId } = await receiptOf(auth);
    const same = await Promise.all(Array.from({ length: 10 }, () => proofOf(auth, receiptId)));
    for (const p of same) expect(p).toEqual(same[0]);
    const txns = await Promise.all(Array.from({ length: 12 }, () => h.adjustment(auth)));
    const proofs = await Promise.all(
      txns.map(async (t) => (await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: t } })).body["proof"] as Proof),
    );
    const bySeq = [same[0]!, ...proofs].sort((a, b) => a.chain.sequence - b.chain.sequence);
    expect(bySeq.map((p) => p.chain.sequence)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    for (let i = 1; i < bySeq.length; i++) expect(bySeq[i]!.chain.previous_hash).toBe(bySeq[i - 1]!.chain.entry_hash);
    const [rows] = await h.env.adminSql<
      { n: string }[]
    >`select count(*) as n from receipts.proofs where org_id = ${auth.org_id} and transaction_id = ${saleTransactionId}`;
    expect(Number(rows?.n)).toBe(1);
    expect((await verify(auth, { receipt_id: receiptId })).valid).toBe(true);
    // Another environment of the same org has a chain of its own, starting at 1.
    const live = { ...auth, livemode: true };
    const liveAdj = await h.adjustment(live);
    expect(((await h.ok("getTransactionReceiptProof", live, { params: { transaction_id: liveAdj } })).body["proof"] as Proof).chain.sequence).toBe(1);
  });

  it("an outsider verifies a proof from its public JSON and the JWKS alone, with jose and SHA-256", async () => {
    // Proves the published format: nothing of this project's code is used below the two fetches.
    const auth = authFor(newOrg());
    const { receiptId } = await receiptOf(auth);
    await h.adjustment(auth).then((t) => h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: t } }));
    const publicProof = JSON.parse(JSON.stringify(await proofOf(auth, receiptId))) as Proof;
    const publicJwks = JSON.parse(JSON.stringify(await jwks())) as JSONWebKeySet;

    const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
    expect(sha256(publicProof.canonical_payload)).toBe(publicProof.receipt_hash);
    expect(canonicalize(JSON.parse(publicProof.canonical_payload))).toBe(publicProof.canonical_payload);
    const { chain } = publicProof;
    expect(sha256(`{"previous_hash":"${chain.previous_hash}","receipt_hash":"${publicProof.receipt_hash}","sequence":${chain.sequence}}`)).toBe(
      chain.entry_hash,
    );
    const { payload, protectedHeader } = await compactVerify(publicProof.service_signature.jws, createLocalJWKSet(publicJwks), { algorithms: ["EdDSA"] });
    expect(protectedHeader).toEqual({ alg: "EdDSA", kid: publicProof.service_signature.kid });
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual({
      entry_hash: chain.entry_hash,
      previous_hash: chain.previous_hash,
      receipt_hash: publicProof.receipt_hash,
      sequence: chain.sequence,
      transaction_id: publicProof.transaction_id,
    });
    // A forged payload under the same signature does not verify.
    const [head, , sig] = publicProof.service_signature.jws.split(".");
    const forged = `${head}.${Buffer.from(new TextDecoder().decode(payload).replace(/"sequence":\d+/, '"sequence":99')).toString("base64url")}.${sig}`;
    await expect(compactVerify(forged, createLocalJWKSet(publicJwks))).rejects.toThrow();
  });
});

describe("signing keys", () => {
  it("rotation: new proofs use the new key, old proofs still verify, the JWKS publishes both", async () => {
    // Proves rotate-key retires the active key without breaking anything it signed.
    const auth = authFor(newOrg());
    const before = await receiptOf(auth);
    const oldProof = await proofOf(auth, before.receiptId);
    const rotated = await rotateSigningKey(pgKeyStore(h.env.adminSql), sealerFor(h.sealingKeys));
    expect(rotated.retired_kids).toContain(oldProof.service_signature.kid);
    expect(rotated.kid).not.toBe(oldProof.service_signature.kid);
    const after = await receiptOf(auth);
    const newProof = await proofOf(auth, after.receiptId);
    expect(newProof.service_signature.kid).toBe(rotated.kid);
    const kids = (await jwks()).keys.map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldProof.service_signature.kid, rotated.kid]));
    for (const k of (await jwks()).keys) {
      expect(k).not.toHaveProperty("d");
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    }
    expect((await verify(auth, { receipt_id: before.receiptId })).valid).toBe(true);
    expect((await verify(auth, { receipt_id: after.receiptId })).valid).toBe(true);
  });

  it("private keys are sealed at rest, never logged, and signing needs the configured sealing keys", async () => {
    // Proves no private key in the clear in the database or the logs, and 503 without (or with other) sealing keys.
    const [row] = await h.env.adminSql<{ kid: string; sealed_private_key: string; public_jwk: Record<string, unknown> }[]>`
      select kid, sealed_private_key, public_jwk from receipts.signing_keys where status = 'active'`;
    expect(row!.sealed_private_key).toMatch(/^v1\.r1\./);
    expect(row!.sealed_private_key).not.toContain("PRIVATE KEY");
    expect(row!.public_jwk).not.toHaveProperty("d");
    const pkcs8 = sealerFor(h.sealingKeys).open(row!.sealed_private_key, `receipts.signing_keys:${row!.kid}`);
    expect(pkcs8).toContain("PRIVATE KEY");
    const secretBody = pkcs8.split("\n")[1]!;

    const auth = authFor(newOrg());
    const adj = await h.adjustment(auth);
    const scope = { orgId: auth.org_id, livemode: false };
    const other = await h.adjustment(auth);
    for (const keyring of [
      new Keyring(pgKeyStore(h.receipts.sql), undefined, h.receipts.log),
      new Keyring(pgKeyStore(h.receipts.sql), sealerFor(newSealingKeys()), h.receipts.log),
    ]) {
      await expect(getTransactionProof({ ...h.receipts.deps, keyring }, scope, other)).rejects.toMatchObject({ code: "service_unavailable" });
    }
    // With the configured keys it signs; proofs already made are answered without signing anything.
    await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: adj } });
    const unsigned = new Keyring(pgKeyStore(h.receipts.sql), undefined, h.receipts.log);
    expect((await getTransactionProof({ ...h.receipts.deps, keyring: unsigned }, scope, adj)).transaction_id).toBe(adj);

    const logged = h.logLines.join("");
    expect(logged).toContain("cannot be opened with the configured sealing keys");
    expect(logged).not.toContain(h.sealingKeys.split(":")[1]);
    expect(logged).not.toContain(secretBody);
    expect(logged).not.toMatch(/PRIVATE KEY|"d":/);
  });
});
