// Proves signed ledger proofs through real RPC, with the ledger and payments as real processes on real PostgreSQL
// and NATS: made on first fetch and identical afterwards, one per transaction under concurrent first fetches,
// consecutive sequences under concurrent proofs of one org, verifiable by an outsider from the public JSON
// alone, a chain that breaks when a stored proof is altered or removed, key rotation, counterparty signatures
// and verification.
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { CompactSign, compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, type JSONWebKeySet, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthContext } from "@treasury/contracts";
import { pino } from "pino";
import { auditChains } from "./usecases/audit-chains.ts";
import { getTransactionProof } from "./usecases/get-proof.ts";
import { Keyring } from "./usecases/keyring.ts";
import { rotateSigningKey } from "./usecases/rotate-key.ts";
import { verifyProof } from "./usecases/verify-proof.ts";
import { authFor, newOrg, newSealingKeys, sealerFor, startHarness, type Harness, type Proof } from "./test-support.ts";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function receiptOf(auth: AuthContext): Promise<{ receiptId: string; saleTransactionId: string }> {
  const cs = await h.checkout(auth);
  const r = await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id } });
  return { receiptId: r.body["receipt_id"] as string, saleTransactionId: cs.saleTransactionId ?? "" };
}

async function proofOf(auth: AuthContext, receiptId: string): Promise<Proof> {
  return (await h.ok("getReceiptProof", auth, { params: { receipt_id: receiptId } })).body["proof"] as Proof;
}

async function jwks(): Promise<JSONWebKeySet> {
  const r = await h.ok("getReceiptJwks", authFor(""), {});
  return { keys: r.body["keys"] as JSONWebKeySet["keys"] };
}

async function verify(auth: AuthContext, body: Record<string, unknown>) {
  return (await h.ok("verifyReceiptProof", auth, { body })).body as {
    valid: boolean;
    checks: { receipt_hash: boolean; chain: boolean; service_signature: boolean; counterparty_signatures: Array<{ key_id: string; valid: boolean }> };
    problems: string[];
  };
}

/** Runs `fn` with the append-only guard of receipts.proofs lifted, as someone with the database's superuser could. */
async function bypassingGuard(fn: (sql: Harness["env"]["adminSql"]) => Promise<unknown>): Promise<void> {
  await h.env.adminSql.begin(async (tx) => {
    await tx`alter table receipts.proofs disable trigger proofs_append_only`;
    await fn(tx as unknown as Harness["env"]["adminSql"]);
    await tx`alter table receipts.proofs enable trigger proofs_append_only`;
  });
}

async function chainOf(n: number): Promise<{ auth: AuthContext; receiptId: string; txns: string[] }> {
  const auth = authFor(newOrg());
  const { receiptId, saleTransactionId } = await receiptOf(auth);
  await proofOf(auth, receiptId);
  const txns = [saleTransactionId];
  for (let i = 1; i < n; i++) {
    const t = await h.adjustment(auth);
    await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: t } });
    txns.push(t);
  }
  expect((await verify(auth, { receipt_id: receiptId })).valid).toBe(true);
  return { auth, receiptId, txns };
}

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

describe("the chain", () => {
  it("refuses updates and deletes of proofs, even by the service's own role", async () => {
    // Proves the append-only guard in the database.
    const { auth } = await chainOf(1);
    await expect(h.sql`update receipts.proofs set receipt_hash = ${"f".repeat(64)} where org_id = ${auth.org_id}`).rejects.toThrow(/append-only/);
    await expect(h.sql`delete from receipts.proofs where org_id = ${auth.org_id}`).rejects.toThrow(/append-only/);
  });

  it("breaks when a stored proof in the middle is altered, even consistently with its own hashes", async () => {
    // Proves an altered payload fails its receipt_hash, and a recomputed one fails the next link and the signature.
    const { auth, receiptId, txns } = await chainOf(4);
    await bypassingGuard(
      (sql) =>
        sql`update receipts.proofs set canonical_payload = replace(canonical_payload, '"amount":100', '"amount":900') where org_id = ${auth.org_id} and sequence = 2`,
    );
    const altered = await verify(auth, { receipt_id: receiptId });
    expect(altered.valid).toBe(false);
    expect(altered.checks).toMatchObject({ receipt_hash: true, chain: false, service_signature: true });
    expect(altered.problems.join("\n")).toMatch(/sequence 2: receipt_hash does not match/);
    await bypassingGuard(async (sql) => {
      const [row] = await sql<{ canonical_payload: string }[]>`select canonical_payload from receipts.proofs where org_id = ${auth.org_id} and sequence = 2`;
      const hash = createHash("sha256").update(row!.canonical_payload).digest("hex");
      await sql`update receipts.proofs set receipt_hash = ${hash} where org_id = ${auth.org_id} and sequence = 2`;
    });
    const rehashed = await verify(auth, { receipt_id: receiptId });
    expect(rehashed.checks.chain).toBe(false);
    expect(rehashed.problems.join("\n")).toMatch(/sequence 2: (entry_hash does not recompute|service signature does not verify)/);
    // The altered proof's own verification fails as well.
    const own = await h.ok("verifyReceiptProof", auth, {
      body: { receipt_hash: ((await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: txns[1]! } })).body["proof"] as Proof).receipt_hash },
    });
    expect(own.body["valid"]).toBe(false);
  });

  it("breaks when a proof in the middle or at the end is removed", async () => {
    // Proves a gap in the sequences and a head that is no longer the last link are both reported.
    const middle = await chainOf(4);
    await bypassingGuard((sql) => sql`delete from receipts.proofs where org_id = ${middle.auth.org_id} and sequence = 3`);
    const gap = await verify(middle.auth, { receipt_id: middle.receiptId });
    expect(gap).toMatchObject({ valid: false, checks: { receipt_hash: true, chain: false, service_signature: true } });
    expect(gap.problems.join("\n")).toMatch(/sequence 3 is missing/);

    const tail = await chainOf(3);
    await bypassingGuard((sql) => sql`delete from receipts.proofs where org_id = ${tail.auth.org_id} and sequence = 3`);
    const cut = await verify(tail.auth, { receipt_id: tail.receiptId });
    expect(cut.checks.chain).toBe(false);
    expect(cut.problems.join("\n")).toMatch(/chain head/);
  });
});

describe("chain checkpoints", () => {
  const scopeOf = (auth: AuthContext) => ({ orgId: auth.org_id, livemode: auth.livemode });
  const every = (n: number) => ({ ...h.receipts.deps, checkpointEvery: n });
  type Verified = Awaited<ReturnType<typeof verify>>;
  const verifyIn = async (deps: ReturnType<typeof every>, auth: AuthContext, receiptId: string): Promise<Verified> =>
    (await verifyProof(deps, scopeOf(auth), { receipt_id: receiptId })) as unknown as Verified;
  const checkpoints = async (orgId: string) =>
    (await h.env.adminSql<{ sequence: string }[]>`select sequence::text from receipts.chain_checkpoints where org_id = ${orgId} order by sequence`).map((r) =>
      Number(r.sequence),
    );
  const link = async (auth: AuthContext) => {
    const t = await h.adjustment(auth);
    await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: t } });
  };
  /** Alters link `sequence`'s payload and recomputes its receipt_hash, as someone able to lift the guard could. */
  const rewrite = (orgId: string, sequence: number) =>
    bypassingGuard(async (sql) => {
      await sql`update receipts.proofs set canonical_payload = replace(canonical_payload, '"amount":100', '"amount":900') where org_id = ${orgId} and sequence = ${sequence}`;
      const [row] = await sql<
        { canonical_payload: string }[]
      >`select canonical_payload from receipts.proofs where org_id = ${orgId} and sequence = ${sequence}`;
      await sql`update receipts.proofs set receipt_hash = ${createHash("sha256").update(row!.canonical_payload).digest("hex")} where org_id = ${orgId} and sequence = ${sequence}`;
    });

  it("a verification records a signed checkpoint and later ones start there; the full audit still finds a change before it", async () => {
    // Proves a verification's reads stop growing with the chain, and what it no longer reads is still audited.
    const { auth, receiptId } = await chainOf(5);
    expect(await checkpoints(auth.org_id)).toEqual([]);
    const deps = every(3);
    expect((await verifyIn(deps, auth, receiptId)).valid).toBe(true);
    expect(await checkpoints(auth.org_id)).toEqual([5]);
    // An outsider checks the checkpoint with the JWKS alone.
    const [cp] = await h.env.adminSql<{ signature_jws: string; entry_hash: string }[]>`
      select signature_jws, entry_hash from receipts.chain_checkpoints where org_id = ${auth.org_id}`;
    const { payload } = await compactVerify(cp!.signature_jws, createLocalJWKSet(await jwks()));
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual({
      entry_hash: cp!.entry_hash,
      format: "treasury.receipt_chain_checkpoint.v1",
      livemode: false,
      org_id: auth.org_id,
      sequence: 5,
    });

    await rewrite(auth.org_id, 2);
    // Link 2 is before the checkpoint: a verification of another proof does not read it again.
    expect((await verifyIn(deps, auth, receiptId)).checks.chain).toBe(true);
    const report = await auditChains(deps, pino({ level: "silent" }));
    expect(report.broken.filter((b) => b.org_id === auth.org_id).map((b) => b.problems.length > 0)).toEqual([true]);
    // Another replica's pass right after walks none of the chains just audited.
    expect((await auditChains(deps, pino({ level: "silent" }), { skipAuditedWithinMs: 3_600_000 })).chains).toBe(0);
    // The service's audit reports the stored findings on /metrics, for the alert.
    await h.receipts.chainAudit.runOnce({ skipAuditedWithinMs: 3_600_000 });
    const gauge = await h.receipts.metrics.getSingleMetricAsString("receipt_chains_broken");
    expect(Number(/^receipt_chains_broken(?:\{[^}]*\})? (\d+)$/m.exec(gauge)?.[1]), gauge).toBeGreaterThanOrEqual(1);
    const audited = await verifyIn(deps, auth, receiptId);
    expect(audited).toMatchObject({ valid: false, checks: { receipt_hash: true, chain: false, service_signature: true } });
    expect(audited.problems.join("\n")).toMatch(/full audit of .*: sequence 2: (entry_hash does not recompute|service signature does not verify)/);
  });

  it("a change after the newest checkpoint fails the verification, and so does a checkpoint whose signature does not verify", async () => {
    // Proves the links a checkpoint does not cover are all walked, and a forged checkpoint is evidence, not a shortcut.
    const { auth, receiptId } = await chainOf(4);
    const deps = every(2);
    await verifyIn(deps, auth, receiptId);
    expect(await checkpoints(auth.org_id)).toEqual([4]);
    await link(auth);
    await link(auth);
    await rewrite(auth.org_id, 6);
    const after = await verifyIn(deps, auth, receiptId);
    expect(after.checks.chain).toBe(false);
    expect(after.problems.join("\n")).toMatch(/sequence 6: (entry_hash does not recompute|service signature does not verify)/);

    const forged = await chainOf(3);
    const [last] = await h.env.adminSql<{ entry_hash: string; signature_kid: string; signature_jws: string }[]>`
      select entry_hash, signature_kid, signature_jws from receipts.proofs where org_id = ${forged.auth.org_id} and sequence = 3`;
    // A link's own JWS is the service's, but over the link, not over a checkpoint.
    await h.env.adminSql`
      insert into receipts.chain_checkpoints (org_id, livemode, sequence, entry_hash, signature_kid, signature_jws)
      values (${forged.auth.org_id}, false, 3, ${last!.entry_hash}, ${last!.signature_kid}, ${last!.signature_jws})`;
    const refused = await verifyIn(deps, forged.auth, forged.receiptId);
    expect(refused.checks.chain).toBe(false);
    expect(refused.problems.join("\n")).toMatch(/checkpoint at sequence 3: service signature does not verify/);
  });
});

describe("signing keys", () => {
  it("rotation: new proofs use the new key, old proofs still verify, the JWKS publishes both", async () => {
    // Proves rotate-key retires the active key without breaking anything it signed.
    const auth = authFor(newOrg());
    const before = await receiptOf(auth);
    const oldProof = await proofOf(auth, before.receiptId);
    const rotated = await rotateSigningKey(h.env.adminSql, sealerFor(h.sealingKeys));
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
      new Keyring(h.receipts.deps.sql, undefined, h.receipts.log),
      new Keyring(h.receipts.deps.sql, sealerFor(newSealingKeys()), h.receipts.log),
    ]) {
      await expect(getTransactionProof({ ...h.receipts.deps, keyring }, scope, other)).rejects.toMatchObject({ code: "service_unavailable" });
    }
    // With the configured keys it signs; proofs already made are answered without signing anything.
    await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: adj } });
    const unsigned = new Keyring(h.receipts.deps.sql, undefined, h.receipts.log);
    expect((await getTransactionProof({ ...h.receipts.deps, keyring: unsigned }, scope, adj)).transaction_id).toBe(adj);

    const logged = h.logLines.join("");
    expect(logged).toContain("cannot be opened with the configured sealing keys");
    expect(logged).not.toContain(h.sealingKeys.split(":")[1]);
    expect(logged).not.toContain(secretBody);
    expect(logged).not.toMatch(/PRIVATE KEY|"d":/);
  });
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
