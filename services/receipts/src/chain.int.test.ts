// Proves the proof chain on real PostgreSQL, with the ledger and payments as real processes: the append-only guard,
// a chain that breaks when a stored proof is altered or removed, signed checkpoints that bound a verification's
// reads, and the full audit that still walks what they spare.
import { createHash } from "node:crypto";
import { compactVerify, createLocalJWKSet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tenantOf, type AuthContext } from "@treasury/contracts";
import { pino } from "pino";
import { auditChains } from "./usecases/audit-chains.ts";
import { verifyProof } from "./usecases/verify-proof.ts";
import { proofHelpers, startHarness, type Harness, type Proof } from "./test-support.ts";

let h: Harness;
const { jwks, verify, bypassingGuard, chainOf } = proofHelpers(() => h);

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
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
  const every = (n: number) => ({ ...h.receipts.deps, checkpointEvery: n });
  type Verified = Awaited<ReturnType<typeof verify>>;
  const verifyIn = async (deps: ReturnType<typeof every>, auth: AuthContext, receiptId: string): Promise<Verified> =>
    (await verifyProof(deps, tenantOf(auth), { receipt_id: receiptId })) as unknown as Verified;
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
    await h.receipts.chainAudit.runOnce();
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
