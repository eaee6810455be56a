// Proves the ledger's operator answers over NATS as the CLI asks them: `ledger verify` reads the invariants on the
// ledger's own pool and role, for every org or one, and records nothing; `admin.find.rows` answers each kind of id
// the ledger holds rows for (scoped lookups only for scoped nodes, request hashes left out) and the nodes other
// services answer next (a transaction's scope, a participant's lists).
import { adminOperation, rpcSubject, type FindHit, type FindNode, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIST_LIMIT } from "../store/find.ts";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";

let h: LedgerHarness;
beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

async function admin(operation: string, payload: unknown): Promise<RpcReply> {
  return rpcCall(await h.env.nats(), rpcSubject(h.env.prefix, "ledger", operation), payload, { timeoutMs: 20_000 });
}

async function verify(flags: Record<string, string | boolean>): Promise<RpcReply> {
  return admin(adminOperation("ledger verify"), { actor: "ops", flags, positionals: [] });
}

async function find(nodes: FindNode[], seed = true): Promise<FindRowsReply> {
  return ok(await admin("admin.find.rows", { nodes, seed })).body as unknown as FindRowsReply;
}

const tables = (hits: readonly FindHit[]): string[] => hits.map((x) => x.table);
const ofTable = (hits: readonly FindHit[], table: string): FindHit[] => hits.filter((x) => x.table === table);

interface Fixture {
  org: string;
  walletId: string;
  saleTx: string;
  reversalTx: string;
  heldId: string;
  releasedId: string;
  releaseId: string;
}

/** A creator with a recorded sale (partly reversed), an active hold and a released one. */
async function fixture(): Promise<Fixture> {
  const org = newOrg();
  const auth = authFor(org);
  const p = ok(await h.call("createParticipant", auth, { body: { participant_id: "c1" } })).body["participant"] as Record<string, unknown>;
  const sale = ok(await h.call("recordSale", auth, { body: { reference_id: "sale-1", creator_id: "c1", amount: 1000, creator_percent: 80 } }));
  const saleTx = String(sale.body["transaction_id"]);
  const reversal = ok(await h.call("reverseTransaction", auth, { body: { transaction_id: saleTx, reason: "part", partial_amount: 100 } }));
  const hold = async (ref: string) =>
    ok(await h.call("createHold", auth, { body: { participant_id: "c1", amount: 50, reference_id: ref, hold_reason_code: "dispute" } })).body["hold"] as Record<
      string,
      unknown
    >;
  const held = await hold("h-1");
  const released = await hold("h-2");
  const release = ok(await h.call("releaseHold", auth, { params: { hold_id: String(released["id"]) }, body: {} })).body["release"] as Record<string, unknown>;
  return {
    org,
    walletId: String(p["wallet_id"]),
    saleTx,
    reversalTx: String(reversal.body["transaction_id"]),
    heldId: String(held["id"]),
    releasedId: String(released["id"]),
    releaseId: String(release["id"]),
  };
}

describe("ledger verify", () => {
  it("answers the invariant report on the ledger's own pool, for every org or one, and writes no audit row", async () => {
    const f = await fixture();
    expect(ok(await verify({})).body).toEqual({ ok: true, violations: [] });
    expect(ok(await verify({ org: f.org })).body).toEqual({ ok: true, violations: [] });

    // A wallet balance its entries do not explain is reported with its org, environment and the rows' values.
    await h.env.adminSql`update ledger.accounts set balance = balance + 1 where id = ${f.walletId}`;
    try {
      const report = ok(await verify({ org: f.org })).body;
      expect(report["ok"]).toBe(false);
      expect(report["violations"]).toContainEqual({
        invariant: "wallet_balance_equals_entries",
        org_id: f.org,
        livemode: false,
        detail: expect.objectContaining({ account_id: f.walletId }),
      });
      expect(ok(await verify({ org: newOrg() })).body).toEqual({ ok: true, violations: [] });
    } finally {
      await h.env.adminSql`update ledger.accounts set balance = balance - 1 where id = ${f.walletId}`;
    }

    const missing = err(await verify({ org: true }));
    expect(missing.code).toBe("validation_error");
    const [audit] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from ledger.audit_log`;
    expect(audit?.n).toBe(0);
  });
});

describe("admin.find.rows", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });

  it("a transaction: its row, reversals, entries with their accounts and its sale; its scope for the other services", async () => {
    const reply = await find([{ kind: "transaction", id: f.saleTx }]);
    const txns = ofTable(reply.hits, "ledger.transactions");
    expect(txns.map((x) => x.row["id"])).toEqual([f.saleTx, f.reversalTx]);
    expect(txns.every((x) => x.follow && !("request_hash" in x.row))).toBe(true);
    expect(txns[0]?.row).toMatchObject({ org_id: f.org, livemode: false, amount: 1000, reversed_amount: 100 });
    const entries = ofTable(reply.hits, "ledger.entries");
    expect(entries.length).toBeGreaterThanOrEqual(2);
    expect(entries.every((x) => !x.follow && x.row["transaction_id"] === f.saleTx)).toBe(true);
    expect(entries.map((x) => x.row["account_type"])).toContain("creator_earnings");
    expect(entries.find((x) => x.row["account_type"] === "creator_earnings")?.row).toMatchObject({ participant_id: "c1", amount: 800 });
    expect(ofTable(reply.hits, "ledger.sales").map((x) => x.row)).toEqual([expect.objectContaining({ sale_reference: "sale-1", gross: 1000 })]);
    expect(reply.nodes).toEqual([{ kind: "transaction", id: f.saleTx, scope: { orgId: f.org, livemode: false } }]);

    // Asked again within its scope, nothing new is said about it.
    expect((await find([{ kind: "transaction", id: f.saleTx, scope: { orgId: f.org, livemode: false } }])).nodes).toEqual([]);
  });

  it("a wallet's uuid: its account, and when asked for itself its participant, active holds and latest entries", async () => {
    const seed = await find([{ kind: "uuid", id: f.walletId.toUpperCase() }]);
    expect(ofTable(seed.hits, "ledger.accounts").map((x) => [x.row["id"], x.follow])).toEqual([[f.walletId, false]]);
    const owner = ofTable(seed.hits, "ledger.participants");
    expect(owner.map((x) => [x.row["participant_id"], x.follow])).toEqual([["c1", false]]);
    expect(owner[0]?.row).not.toHaveProperty("request_hash");
    expect(ofTable(seed.hits, "ledger.holds").map((x) => [x.row["id"], x.follow])).toEqual([[f.heldId, false]]);
    // Holds move no money: the wallet's entries are the sale's credit and the reversal's debit, newest first.
    const entries = ofTable(seed.hits, "ledger.entries");
    expect(entries.map((x) => [x.row["transaction_id"], x.row["entry_type"], x.row["account_type"], x.follow])).toEqual([
      [f.reversalTx, "debit", "creator_earnings", false],
      [f.saleTx, "credit", "creator_earnings", false],
    ]);
    expect(seed.nodes).toEqual([]);

    const walked = await find([{ kind: "uuid", id: f.walletId }], false);
    expect(tables(walked.hits)).toEqual(["ledger.accounts"]);
    expect((await find([{ kind: "uuid", id: "not-a-uuid" }])).hits).toEqual([]);
  });

  it("a wallet's latest entries are its newest LIST_LIMIT", async () => {
    const auth = authFor(newOrg());
    const wallet = ok(await h.call("createWallet", auth, { body: { owner_id: "buyer" } })).body["wallet"] as Record<string, unknown>;
    const walletId = String(wallet["id"]);
    for (let i = 1; i <= LIST_LIMIT + 1; i++) {
      ok(await h.call("depositToWallet", auth, { params: { wallet_id: walletId }, body: { amount: i, reference_id: `d-${i}` } }));
    }
    const entries = ofTable((await find([{ kind: "uuid", id: walletId }])).hits, "ledger.entries");
    expect(entries.map((x) => x.row["amount"])).toEqual(Array.from({ length: LIST_LIMIT }, (_, i) => LIST_LIMIT + 1 - i));
  });

  it("holds by id and by release id", async () => {
    const reply = await find([
      { kind: "hold", id: f.heldId },
      { kind: "release", id: f.releaseId },
    ]);
    expect(reply.hits.map((x) => [x.table, x.row["id"], x.follow])).toEqual([
      ["ledger.holds", f.heldId, true],
      ["ledger.holds", f.releasedId, true],
    ]);
  });

  it("a sale reference only within an org", async () => {
    expect((await find([{ kind: "sale", id: "sale-1" }])).hits).toEqual([]);
    expect((await find([{ kind: "sale", id: "sale-1", scope: { orgId: newOrg() } }])).hits).toEqual([]);
    const reply = await find([{ kind: "sale", id: "sale-1", scope: { orgId: f.org } }]);
    expect(reply.hits.map((x) => [x.table, x.row["transaction_id"], x.follow])).toEqual([["ledger.sales", f.saleTx, true]]);
  });

  it("a participant in every org or one; asked for itself, its wallet's lists and its lists in other services", async () => {
    const other = newOrg();
    ok(await h.call("createParticipant", authFor(other, true), { body: { participant_id: "c1" } }));
    const everywhere = await find([{ kind: "participant", id: "c1" }], false);
    expect(ofTable(everywhere.hits, "ledger.participants").map((x) => x.row["org_id"])).toEqual(expect.arrayContaining([f.org, other]));
    expect(everywhere.nodes).toEqual([]);

    const reply = await find([{ kind: "participant", id: "c1", scope: { orgId: f.org, livemode: false } }]);
    expect(ofTable(reply.hits, "ledger.participants").map((x) => [x.row["org_id"], x.follow, "request_hash" in x.row])).toEqual([[f.org, false, false]]);
    expect(ofTable(reply.hits, "ledger.accounts").map((x) => x.row["id"])).toEqual([f.walletId]);
    expect(ofTable(reply.hits, "ledger.holds").map((x) => x.row["id"])).toEqual([f.heldId]);
    expect(ofTable(reply.hits, "ledger.entries").length).toBeGreaterThan(0);
    expect(reply.nodes).toEqual([{ kind: "participant_lists", id: "c1", scope: { orgId: f.org, livemode: false } }]);
    expect((await find([{ kind: "participant", id: "c1", scope: { orgId: f.org, livemode: true } }])).hits).toEqual([]);
  });

  it("a ledger reference: the transaction another service posted with that kind and reference, within its scope", async () => {
    const [sale] = ofTable((await find([{ kind: "transaction", id: f.saleTx }], false)).hits, "ledger.transactions");
    const id = `${String(sale?.row["kind"])}|${String(sale?.row["reference_id"])}`;
    const reply = await find([{ kind: "ledger_reference", id, scope: { orgId: f.org, livemode: false } }], false);
    expect(reply.hits.map((x) => [x.table, x.row["id"], x.follow, "request_hash" in x.row])).toEqual([["ledger.transactions", f.saleTx, true, false]]);
    expect((await find([{ kind: "ledger_reference", id, scope: { orgId: f.org } }], false)).hits).toHaveLength(1);
    expect((await find([{ kind: "ledger_reference", id, scope: { orgId: f.org, livemode: true } }], false)).hits).toEqual([]);
    expect((await find([{ kind: "ledger_reference", id }], false)).hits).toEqual([]);
    expect((await find([{ kind: "ledger_reference", id: `${id}|more`, scope: { orgId: f.org } }], false)).hits).toEqual([]);
  });

  it("ids the ledger holds no rows for", async () => {
    expect(
      await find([
        { kind: "payout", id: "po_x" },
        { kind: "constructor", id: "x" },
      ]),
    ).toEqual({ hits: [], nodes: [] });
  });
});
