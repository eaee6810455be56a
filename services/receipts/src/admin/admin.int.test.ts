// Proves the receipts service's operator commands and its `admin find` answer over NATS, on real PostgreSQL with
// the ledger and payments as real processes: a key rotation sealed with the service's own sealing keys, a full
// chain audit that names the broken chain, the audit row each one leaves in receipts.audit_log, and the receipt
// and proof rows an id leads to.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_FANOUT_OPERATIONS, adminOperation, rpcSubject, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { authFor, newOrg, proofHelpers, startHarness, type Harness } from "../test-support.ts";

let h: Harness;
const { receiptOf, proofOf, verify, bypassingGuard, chainOf } = proofHelpers(() => h);

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const ask = async (operation: string, payload: unknown): Promise<RpcReply> =>
  rpcCall(await h.env.nats(), rpcSubject(h.env.prefix, "receipts", operation), payload, { timeoutMs: 20_000 });

async function command(name: string, reason?: string): Promise<Record<string, unknown>> {
  const r = await ask(adminOperation(name), { actor: "ops@example.test", reason, flags: {}, positionals: [] });
  if (!r.ok) throw new Error(`${name}: ${r.error.code}: ${r.error.message}`);
  return r.body;
}

async function findRows(nodes: unknown[]): Promise<FindRowsReply> {
  const r = await ask(ADMIN_FANOUT_OPERATIONS.findRows, { nodes, seed: true });
  if (!r.ok) throw new Error(`find rows: ${r.error.code}: ${r.error.message}`);
  return r.body as unknown as FindRowsReply;
}

interface AuditRow {
  actor: string;
  action: string;
  org_id: string | null;
  target_ids: string[];
  reason: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

const lastAudit = async (action: string): Promise<AuditRow | undefined> =>
  (await h.env.adminSql<AuditRow[]>`select * from receipts.audit_log where action = ${action} order by id desc limit 1`)[0];

describe("receipts rotate-key", () => {
  it("makes a new signing key with the service's sealing keys, retires the old one, and records who did it", async () => {
    // Proves the answer, that proofs signed before still verify and new ones use the new key, and the audit row.
    const auth = authFor(newOrg());
    const before = await receiptOf(auth);
    const oldKid = (await proofOf(auth, before.receiptId)).service_signature.kid;
    const rotated = await command("receipts rotate-key", "scheduled rotation");
    expect(rotated).toMatchObject({ alg: "EdDSA", retired_kids: [oldKid] });
    expect(rotated["kid"]).not.toBe(oldKid);
    expect(new Date(String(rotated["created_at"])).toISOString()).toBe(rotated["created_at"]);
    expect((await verify(auth, { receipt_id: before.receiptId })).valid).toBe(true);
    const after = await receiptOf(auth);
    expect((await proofOf(auth, after.receiptId)).service_signature.kid).toBe(rotated["kid"]);

    expect(await lastAudit("receipts.rotate-key")).toMatchObject({
      actor: "ops@example.test",
      org_id: null,
      target_ids: [rotated["kid"], oldKid],
      reason: "scheduled rotation",
      outcome: "succeeded",
      details: { kid: rotated["kid"], retired_kids: [oldKid] },
    });
  });
});

describe("receipts audit-chains", () => {
  it("walks every chain, names a broken one, and records what it found", async () => {
    // Proves the answer {chains, broken} and the audit row's targets (the broken chains' orgs) and counts.
    await chainOf(2);
    const broken = await chainOf(3);
    await bypassingGuard((sql) => sql`delete from receipts.proofs where org_id = ${broken.auth.org_id} and sequence = 2`);
    const report = await command("receipts audit-chains");
    const chains = (await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from receipts.chain_heads`)[0]?.n;
    expect(report["chains"]).toBe(chains);
    expect(report["broken"]).toEqual([
      { org_id: broken.auth.org_id, livemode: false, problems: expect.arrayContaining([expect.stringMatching(/sequence 2 is missing/)]) },
    ]);
    expect(await lastAudit("receipts.audit-chains")).toMatchObject({
      actor: "ops@example.test",
      target_ids: [broken.auth.org_id],
      reason: null,
      outcome: "succeeded",
      details: { chains, broken: 1 },
    });
  });
});

describe("admin find", () => {
  it("answers a receipt by its id, and its org for what other services hold", async () => {
    // Proves the lookup by key answers an unscoped id and returns it again with the receipt's org and environment.
    const auth = authFor(newOrg());
    const { receiptId, saleTransactionId } = await receiptOf(auth);
    const found = await findRows([{ kind: "receipt", id: receiptId }]);
    expect(found.hits).toEqual([
      { table: "receipts.receipts", follow: true, row: expect.objectContaining({ id: receiptId, sale_transaction_id: saleTransactionId }) },
    ]);
    expect(found.nodes).toEqual([{ kind: "receipt", id: receiptId, scope: { orgId: auth.org_id, livemode: false } }]);
  });

  it("answers a transaction's receipt and proof only within the org and environment that named it", async () => {
    // Proves the scoped lookups, the proof shown without its signed payload and signature, and nothing for an unscoped id.
    const auth = authFor(newOrg());
    const { receiptId, saleTransactionId } = await receiptOf(auth);
    await proofOf(auth, receiptId);
    const found = await findRows([{ kind: "transaction", id: saleTransactionId, scope: { orgId: auth.org_id, livemode: false } }]);
    expect(found.hits.map((x) => [x.table, x.follow])).toEqual([
      ["receipts.receipts", true],
      ["receipts.proofs", false],
    ]);
    const proof = found.hits[1]?.row ?? {};
    expect(proof).toMatchObject({ transaction_id: saleTransactionId, sequence: 1 });
    expect(proof).not.toHaveProperty("canonical_payload");
    expect(proof).not.toHaveProperty("signature_jws");
    expect(found.nodes).toEqual([]);
    expect((await findRows([{ kind: "transaction", id: saleTransactionId }])).hits).toEqual([]);
    expect((await findRows([{ kind: "transaction", id: saleTransactionId, scope: { orgId: auth.org_id, livemode: true } }])).hits).toEqual([]);
    expect((await findRows([{ kind: "transaction", id: saleTransactionId, scope: { orgId: newOrg() } }])).hits).toEqual([]);
  });
});
