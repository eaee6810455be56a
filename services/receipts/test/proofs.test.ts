// Proves building proofs over in-memory ports: the first fetch makes the chain's next link, signed over its place
// in the chain; later fetches answer it without reading the ledger again; concurrent fetches make one proof, and
// proofs of one chain get consecutive links; without signing nothing is appended. Verification and the full audit
// find a proof altered in the store.
import { describe, expect, it } from "vitest";
import type { Tenant } from "@treasury/contracts";
import { entryHash, GENESIS_HASH, serviceSigningPayload, sha256Hex } from "../src/domain/canonical.ts";
import { verifiesOver } from "../src/signing/jws.ts";
import { auditChains } from "../src/usecases/audit-chains.ts";
import { getTransactionProof, proofOf } from "../src/usecases/get-proof.ts";
import { verifyProof } from "../src/usecases/verify-proof.ts";
import { fakes, silentLog, transactionRecord, type Fakes } from "./fakes.ts";

const tenant: Tenant = { orgId: "org_unit", livemode: false };

function withTransactions(f: Fakes, n: number): string[] {
  return Array.from({ length: n }, () => {
    const t = transactionRecord(tenant);
    f.reads.records.set(t.id, t);
    return t.id;
  });
}

describe("building a proof", () => {
  it("the first fetch appends a signed link; later fetches answer the same proof without reading the ledger", async () => {
    const f = fakes();
    const [txn] = withTransactions(f, 1);
    const first = await proofOf(f.deps, tenant, txn!);
    expect(first).toMatchObject({ transaction_id: txn, sequence: 1, previous_hash: GENESIS_HASH, signature_alg: "EdDSA" });
    expect(first.receipt_hash).toBe(sha256Hex(first.canonical_payload));
    expect(first.entry_hash).toBe(entryHash(first));
    const jwk = await f.deps.keyring.publicKey(first.signature_kid);
    expect(await verifiesOver(first.signature_jws, { jwk: jwk!, alg: "EdDSA" }, serviceSigningPayload(first))).toBe(true);
    expect(f.reads.calls).toEqual([`transactionRecord ${txn}`]);

    expect(await proofOf(f.deps, tenant, txn!)).toEqual(first);
    expect((await getTransactionProof(f.deps, tenant, txn!)).chain).toEqual({ sequence: 1, previous_hash: GENESIS_HASH, entry_hash: first.entry_hash });
    expect(f.reads.calls).toHaveLength(1);
    expect(await f.proofs.head(tenant)).toEqual({ last_sequence: 1, last_entry_hash: first.entry_hash });
  });

  it("concurrent first fetches make one proof; proofs of one chain get consecutive, linked sequences", async () => {
    const f = fakes();
    const txns = withTransactions(f, 6);
    const same = await Promise.all(Array.from({ length: 5 }, () => proofOf(f.deps, tenant, txns[0]!)));
    for (const p of same) expect(p).toEqual(same[0]);
    await Promise.all(txns.slice(1).map((t) => proofOf(f.deps, tenant, t)));
    const chain = [...f.proofs.proofs].sort((a, b) => a.sequence - b.sequence);
    expect(chain.map((p) => p.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(chain.map((p) => p.transaction_id))).toEqual(new Set(txns));
    for (let i = 1; i < chain.length; i++) expect(chain[i]!.previous_hash).toBe(chain[i - 1]!.entry_hash);
    // Another environment is a chain of its own.
    const live = { ...tenant, livemode: true };
    const liveTxn = transactionRecord(live);
    f.reads.records.set(liveTxn.id, liveTxn);
    expect((await proofOf(f.deps, live, liveTxn.id)).sequence).toBe(1);
  });

  it("without signing keys nothing is appended, and a malformed or unknown id is transaction_not_found", async () => {
    const f = fakes({ sealer: undefined });
    const [txn] = withTransactions(f, 1);
    await expect(proofOf(f.deps, tenant, txn!)).rejects.toMatchObject({ code: "service_unavailable" });
    expect(f.proofs.proofs).toEqual([]);
    expect(f.keys.rows).toEqual([]);
    await expect(proofOf(f.deps, tenant, "not a txn")).rejects.toMatchObject({ code: "transaction_not_found" });
    await expect(proofOf(fakes().deps, tenant, "txn_missing")).rejects.toMatchObject({ code: "transaction_not_found" });
  });
});

describe("checking proofs", () => {
  it("a whole chain verifies; a link altered in the store fails verification and the full audit", async () => {
    const f = fakes();
    const txns = withTransactions(f, 3);
    for (const t of txns) await proofOf(f.deps, tenant, t);
    const whole = await verifyProof(f.deps, tenant, { receipt_hash: f.proofs.proofs[0]!.receipt_hash });
    expect(whole).toMatchObject({ valid: true, checks: { receipt_hash: true, chain: true, service_signature: true }, problems: [] });
    expect(await auditChains(f.deps, silentLog)).toEqual({ chains: 1, broken: [] });

    const second = f.proofs.proofs.find((p) => p.sequence === 2)!;
    second.canonical_payload = second.canonical_payload.replace('"amount":4999', '"amount":9999');
    const broken = await verifyProof(f.deps, tenant, { receipt_hash: f.proofs.proofs[0]!.receipt_hash });
    expect(broken).toMatchObject({ valid: false, checks: { receipt_hash: true, chain: false } });
    expect((broken["problems"] as string[]).join("\n")).toMatch(/sequence 2: receipt_hash does not match/);
    const report = await auditChains(f.deps, silentLog);
    expect(report.broken).toEqual([{ org_id: tenant.orgId, livemode: false, problems: [expect.stringMatching(/sequence 2/)] }]);
    expect(await f.chains.countBroken()).toBe(1);
    // A chain audited a moment ago is skipped by the next replica's pass.
    expect((await auditChains(f.deps, silentLog, { skipAuditedWithinMs: 60_000 })).chains).toBe(0);
  });

  it("a verification that walked far enough records a signed checkpoint, and the next one starts there", async () => {
    const f = fakes({ checkpointEvery: 2 });
    const txns = withTransactions(f, 3);
    for (const t of txns) await proofOf(f.deps, tenant, t);
    expect((await verifyProof(f.deps, tenant, { receipt_hash: f.proofs.proofs[0]!.receipt_hash }))["valid"]).toBe(true);
    expect((await f.chains.newestCheckpoint(tenant))?.sequence).toBe(3);
    // Link 1 is before the checkpoint now: a verification no longer reads it, the full audit does.
    f.proofs.proofs[0]!.canonical_payload += " ";
    expect((await verifyProof(f.deps, tenant, { receipt_hash: f.proofs.proofs[2]!.receipt_hash }))["checks"]).toMatchObject({ chain: true });
    expect((await auditChains(f.deps, silentLog)).broken).toHaveLength(1);
  });
});
