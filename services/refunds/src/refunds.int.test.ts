// Proves POST/GET /v1/refunds through real RPC, with the ledger and payments as real processes on real
// PostgreSQL and NATS: the answer shape, partial refunds down to a full one, replays that never move money
// twice, duplicate_refund_reference, the ledger's refusals as failed refunds, the shortfall policy both ways,
// a ledger outage as "outcome unknown" finished by the reconciler, concurrency, events, and isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setShortfallPolicy } from "./store/settings.ts";
import { authFor, creatorWallet, err, newOrg, ok, recordSale, startRefunds, walletBalance, walletCheckout, type RefundsHarness } from "./test-support.ts";

let h: RefundsHarness;

beforeAll(async () => {
  h = await startRefunds();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

type Auth = ReturnType<typeof authFor>;
type Refund = Record<string, unknown> & { id: string; breakdown: Record<string, number> };

const refund = (auth: Auth, body: Record<string, unknown>) => h.call("refunds", "createRefund", auth, { body });

async function ledgerRefunds(org: string): Promise<number> {
  const [row] = await h.env.adminSql<
    { n: string }[]
  >`select count(*)::text as n from ledger.transactions where org_id = ${org} and reference_id like 'refund%'`;
  return Number(row?.n);
}

async function events(org: string, type: string): Promise<Record<string, unknown>[]> {
  const rows = await h.env.adminSql<{ payload: { data: Record<string, unknown> } }[]>`
    select payload from refunds.outbox where org_id = ${org} and type = ${type} order by seq`;
  return rows.map((r) => r.payload.data);
}

async function receivable(org: string): Promise<number> {
  const [row] = await h.env.adminSql<{ n: string }[]>`
    select coalesce(sum(s.balance), 0)::text as n from ledger.accounts a join ledger.account_balance_shards s on s.account_id = a.id
    where a.org_id = ${org} and a.account_type = 'creator_receivable'`;
  return Number(row?.n ?? 0);
}

describe("createRefund", () => {
  it("refunds part of a sale from its hold first, answers the refund, and emits refund.created and sale.refunded", async () => {
    // Proves the wire shape (refunded_amount_cents and refunded_amount alike), the ledger's split, the hold used first, GET, and the two events.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 10_000, creatorPercent: 80, holdFunds: true });
    const r = ok(
      await refund(auth, {
        original_sale_reference: sale.saleReference,
        amount: 2_500,
        reason: "damaged",
        idempotency_key: "rf-1",
        metadata: { ticket: "T-1" },
      }),
    );
    expect(r.status).toBe(201);
    const rf = r.body["refund"] as Refund;
    expect(rf.id).toMatch(/^re_[a-z0-9]{24}$/);
    expect(rf).toMatchObject({
      object: "refund",
      sale_reference: sale.saleReference,
      sale_transaction_id: sale.saleTransactionId,
      participant_id: sale.creator,
      refunded_amount_cents: 2_500,
      refunded_amount: 2_500,
      currency: "USD",
      status: "completed",
      reason: "damaged",
      refund_from: "both",
      external_refund_id: null,
      is_full_refund: false,
      remaining_amount_cents: 7_500,
      breakdown: { from_creator_cents: 2_000, from_platform_cents: 500, sales_tax_cents: 0, hold_amount_used_cents: 2_000, creator_receivable_cents: 0 },
      metadata: { ticket: "T-1" },
    });
    expect(String(rf["transaction_id"])).toMatch(/^txn_/);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 6_000, held: 6_000 });
    expect(ok(await h.call("refunds", "getRefund", auth, { params: { refund_id: rf.id } })).body["refund"]).toEqual(rf);
    expect(await events(auth.org_id, "refund.created")).toEqual([rf]);
    expect(await events(auth.org_id, "sale.refunded")).toEqual([
      expect.objectContaining({
        sale_reference: sale.saleReference,
        refund_id: rf.id,
        amount_cents: 2_500,
        remaining_amount_cents: 7_500,
        sale_amount_cents: 10_000,
        is_full_refund: false,
      }),
    ]);
    // The ledger transaction carries the reference derived from the refund's own id.
    const [tx] = await h.env.adminSql<{ reference_id: string }[]>`select reference_id from ledger.transactions where id = ${String(rf["transaction_id"])}`;
    expect(tx?.reference_id).toBe(`refund:${rf.id}`);
  });

  it("replays: the same key answers the refund again; another request under it is duplicate_refund_reference; nothing moves twice", async () => {
    // Proves idempotency on idempotency_key, on external_refund_id, and on the derived key of a keyless request.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 5_000, creatorPercent: 50 });
    const body = { sale_reference: sale.saleReference, amount: 1_000, reason: "late", idempotency_key: "k-1" };
    const first = ok(await refund(auth, body));
    const again = ok(await refund(auth, { ...body, refund_from: "both" }));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ refund: first.body["refund"], idempotent: true });
    const conflict = err(await refund(auth, { ...body, amount: 999 }));
    expect(conflict.code).toBe("duplicate_refund_reference");
    expect(conflict.extra?.["refund"]).toEqual(first.body["refund"]);
    expect(conflict.extra?.["existing_refund_id"]).toBe((first.body["refund"] as Refund).id);

    const ext = ok(await refund(auth, { sale_reference: sale.saleReference, amount: 500, reason: "partial", external_refund_id: "ext-9" }));
    expect(
      ok(await refund(auth, { sale_reference: sale.saleReference, amount: 500, reason: "partial", external_refund_id: "ext-9", idempotency_key: "other" }))
        .body["idempotent"],
    ).toBe(true);
    expect(err(await refund(auth, { sale_reference: sale.saleReference, amount: 600, reason: "partial", external_refund_id: "ext-9" })).code).toBe(
      "duplicate_refund_reference",
    );

    // Without a key, the same sale + amount + external_refund_id is the same refund (a retry after a timeout).
    const keyless = { original_sale_reference: sale.saleReference, amount: 250, reason: "retry me" };
    const k1 = ok(await refund(auth, keyless));
    const k2 = ok(await refund(auth, keyless));
    expect([k1.status, k2.status, (k2.body["refund"] as Refund).id]).toEqual([201, 200, (k1.body["refund"] as Refund).id]);
    expect(await ledgerRefunds(auth.org_id)).toBe(3);
    expect((ext.body["refund"] as Refund)["remaining_amount_cents"]).toBe(3_500);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 2_500 - 500 - 250 - 125, held: 0 });
  });

  it("many partial refunds end exactly where one full refund would, then the sale is fully refunded", async () => {
    // Proves cumulative splits to the cent over odd partials, is_full_refund on the last, and sale_already_fully_refunded after it.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 1_001, creatorPercent: 33.33, salesTax: 101 });
    const parts = [7, 333, 1, 250];
    let creator = 0;
    for (const [i, amount] of parts.entries()) {
      const rf = ok(await refund(auth, { sale_reference: sale.saleReference, amount, reason: `part ${i}` })).body["refund"] as Refund;
      creator += rf.breakdown["from_creator_cents"] ?? 0;
    }
    const last = ok(await refund(auth, { sale_reference: sale.saleReference, reason: "the rest" })).body["refund"] as Refund;
    creator += last.breakdown["from_creator_cents"] ?? 0;
    expect(last).toMatchObject({ refunded_amount_cents: 1_001 - 591, is_full_refund: true, remaining_amount_cents: 0 });
    // floor((1001 - 101) × 33.33 %) = 299: all of it came back, and the wallet is empty.
    expect(creator).toBe(299);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 0, held: 0 });
    const done = err(await refund(auth, { sale_reference: sale.saleReference, amount: 5, reason: "more" }));
    expect(done.code).toBe("sale_already_fully_refunded");
    expect(done.extra?.["refund"]).toMatchObject({ status: "failed", failure_code: "sale_already_fully_refunded", refunded_amount_cents: 0 });
  });

  it("answers the ledger's refusals with their codes, records the refund as failed, and moves nothing", async () => {
    // Proves original_sale_not_found, refund_amount_exceeds_remaining (with remaining_amount), per-side limits, sale_already_reversed.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 1_000, creatorPercent: 80 });
    const missing = err(await refund(auth, { sale_reference: "no-such-sale", reason: "x" }));
    expect(missing.code).toBe("original_sale_not_found");
    const failedId = (missing.extra?.["refund"] as Refund).id;
    expect(ok(await h.call("refunds", "getRefund", auth, { params: { refund_id: failedId } })).body["refund"]).toMatchObject({
      status: "failed",
      failure_code: "original_sale_not_found",
    });
    // Its replay answers the same failure, and moves nothing.
    expect(err(await refund(auth, { sale_reference: "no-such-sale", reason: "x" })).code).toBe("original_sale_not_found");
    const over = err(await refund(auth, { sale_reference: sale.saleReference, amount: 1_001, reason: "x" }));
    expect([over.code, over.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 1_000]);
    const side = err(await refund(auth, { sale_reference: sale.saleReference, amount: 201, refund_from: "platform_only", reason: "x" }));
    expect([side.code, side.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 200]);
    expect(await ledgerRefunds(auth.org_id)).toBe(0);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 800, held: 0 });
    ok(await h.call("ledger", "reverseTransaction", auth, { body: { transaction_id: sale.saleTransactionId, reason: "fraud" } }));
    expect(err(await refund(auth, { sale_reference: sale.saleReference, amount: 1, reason: "x" })).code).toBe("sale_already_reversed");
    expect(await events(auth.org_id, "refund.created")).toEqual([]);
    const failed = ok(await h.call("refunds", "listRefunds", auth, { query: {} })).body;
    // Four failed refunds: the replay of the first was the same refund.
    expect(failed).toMatchObject({ total: 4, count: 4, limit: 20, offset: 0 });
    expect((failed["refunds"] as Refund[]).every((r) => r["status"] === "failed" && r["refunded_amount_cents"] === 0)).toBe(true);
  });

  it("a refund of a wallet-funded checkout goes back to the buyer's wallet; creator_only and platform_only take one side", async () => {
    // Proves checkout sales (sale_reference checkout:<id>) refund to their source, and refund_from.
    const auth = authFor(newOrg());
    const { creator } = await recordSale(h, auth, { amount: 100, creatorPercent: 50 });
    const sale = await walletCheckout(h, auth, { amount: 4_000, creator, buyer: "buyer_1" });
    expect(sale.saleReference).toMatch(/^checkout:/);
    expect(await walletBalance(h, auth, sale.walletId)).toBe(0);
    const c = ok(await refund(auth, { sale_reference: sale.saleReference, amount: 1_000, refund_from: "creator_only", reason: "x" })).body["refund"] as Refund;
    expect(c.breakdown).toMatchObject({ from_creator_cents: 1_000, from_platform_cents: 0 });
    const p = ok(await refund(auth, { sale_reference: sale.saleReference, amount: 300, refund_from: "platform_only", reason: "y" })).body["refund"] as Refund;
    expect(p.breakdown).toMatchObject({ from_creator_cents: 0, from_platform_cents: 300 });
    expect(await walletBalance(h, auth, sale.walletId)).toBe(1_300);
  });
});

describe("shortfall policy", () => {
  it("receivable (the default) books what the creator lacks to creator_receivable; refuse answers insufficient_balance and moves nothing", async () => {
    // Proves both policies of docs/adr/0009-refund-shortfall.md on a creator who spent the share.
    const auth = authFor(newOrg());
    const scope = { orgId: auth.org_id, livemode: false };
    const first = await recordSale(h, auth, { amount: 1_000, creatorPercent: 80 });
    const second = await recordSale(h, auth, { amount: 1_000, creatorPercent: 80, creator: first.creator });
    // The creator's earnings leave the wallet (as a payout would).
    ok(await h.call("ledger", "createParticipant", auth, { body: { participant_id: "spender" } }));
    ok(
      await h.call("ledger", "transferBetweenWallets", auth, {
        body: { from_participant_id: first.creator, to_participant_id: "spender", amount: 1_500, reference_id: "drain" },
      }),
    );
    expect(await creatorWallet(h, auth, first.creator)).toEqual({ balance: 100, held: 0 });

    await setShortfallPolicy(h.env.adminSql, scope, "refuse");
    const refused = err(await refund(auth, { sale_reference: first.saleReference, reason: "strict", idempotency_key: "strict" }));
    expect(refused.code).toBe("insufficient_balance");
    expect(refused.extra?.["refund"]).toMatchObject({ status: "failed", shortfall_policy: "refuse", failure_code: "insufficient_balance" });
    expect(await creatorWallet(h, auth, first.creator)).toEqual({ balance: 100, held: 0 });
    expect(await ledgerRefunds(auth.org_id)).toBe(0);
    // A partial the balance covers still goes through under refuse.
    ok(await refund(auth, { sale_reference: first.saleReference, amount: 100, reason: "covered" }));

    await setShortfallPolicy(h.env.adminSql, scope, "receivable");
    const booked = ok(await refund(auth, { sale_reference: second.saleReference, reason: "lenient" })).body["refund"] as Refund;
    expect(booked).toMatchObject({ shortfall_policy: "receivable", status: "completed", refunded_amount_cents: 1_000 });
    expect(booked.breakdown).toMatchObject({ from_creator_cents: 800, creator_receivable_cents: 800 - 20 });
    // The creator's ledger balance shows the debt: negative until the next earnings repay it.
    expect(await creatorWallet(h, auth, first.creator)).toEqual({ balance: -780, held: 0 });
    expect(await receivable(auth.org_id)).toBe(780);
  });
});

describe("outcome unknown", () => {
  it("a ledger that does not answer leaves the refund pending (504); the reconciler completes it once the ledger is back", async () => {
    // Proves a timeout is never "failed", a retry with the same key reads the outcome, and the money moves once.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 2_000, creatorPercent: 50 });
    const body = { sale_reference: sale.saleReference, amount: 700, reason: "outage", idempotency_key: "outage-1" };
    let refundId = "";
    await h.withLedgerStopped(async () => {
      const down = err(await refund(auth, body));
      expect(down.code).toBe("service_timeout");
      const [row] = await h.env.adminSql<{ id: string; status: string }[]>`select id, status from refunds.refunds where org_id = ${auth.org_id}`;
      expect(row?.status).toBe("pending");
      refundId = row?.id ?? "";
      expect(await h.refunds.reconciler.runOnce()).toBe(0);
    });
    expect(await h.refunds.reconciler.runOnce()).toBe(1);
    const got = ok(await h.call("refunds", "getRefund", auth, { params: { refund_id: refundId } })).body["refund"] as Refund;
    expect(got).toMatchObject({ status: "completed", refunded_amount_cents: 700 });
    const retry = ok(await refund(auth, body));
    expect(retry.body).toEqual({ refund: got, idempotent: true });
    expect(await ledgerRefunds(auth.org_id)).toBe(1);
    expect((await events(auth.org_id, "refund.created")).length).toBe(1);
  }, 120_000);
});

describe("concurrency", () => {
  it("concurrent requests with one key make one refund; concurrent different refunds never exceed the sale", async () => {
    // Proves one ledger movement per key under a race, and the sale's remainder holding under parallel partials.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 1_000, creatorPercent: 70 });
    const same = await Promise.all(
      Array.from({ length: 8 }, () => refund(auth, { sale_reference: sale.saleReference, amount: 100, reason: "race", idempotency_key: "race" })),
    );
    const ids = new Set(same.map((r) => (ok(r).body["refund"] as Refund).id));
    expect(ids.size).toBe(1);
    expect(same.filter((r) => r.ok && r.status === 201)).toHaveLength(1);
    const many = await Promise.all(
      Array.from({ length: 12 }, (_, i) => refund(auth, { sale_reference: sale.saleReference, amount: 100, reason: "parallel", idempotency_key: `p-${i}` })),
    );
    expect(many.filter((r) => r.ok)).toHaveLength(9);
    expect(many.filter((r) => !r.ok).map((r) => err(r).code)).toEqual(expect.arrayContaining(["sale_already_fully_refunded"]));
    expect(await ledgerRefunds(auth.org_id)).toBe(10);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 0, held: 0 });
  }, 60_000);
});

describe("reads and isolation", () => {
  it("lists newest first with paging and by sale; a live key sees no sandbox refund; bad ids are refund_not_found", async () => {
    // Proves GET /v1/refunds paging and the sale filter, environment isolation, and 404s.
    const auth = authFor(newOrg());
    const a = await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 });
    const b = await recordSale(h, auth, { amount: 1_000, creatorPercent: 50, creator: a.creator });
    const made: string[] = [];
    for (const s of [a, b, a])
      made.push((ok(await refund(auth, { sale_reference: s.saleReference, amount: 100 + made.length, reason: "r" })).body["refund"] as Refund).id);
    const page = ok(await h.call("refunds", "listRefunds", auth, { query: { limit: 2, offset: 1 } })).body;
    expect(page).toMatchObject({ total: 3, count: 2, limit: 2, offset: 1 });
    expect((page["refunds"] as Refund[]).map((r) => r.id)).toEqual([made[1], made[0]]);
    const ofA = ok(await h.call("refunds", "listRefunds", auth, { query: { sale_reference: a.saleReference } })).body;
    expect((ofA["refunds"] as Refund[]).map((r) => r.id)).toEqual([made[2], made[0]]);
    const live = authFor(auth.org_id, true);
    expect(err(await h.call("refunds", "getRefund", live, { params: { refund_id: made[0] ?? "" } })).code).toBe("refund_not_found");
    expect(ok(await h.call("refunds", "listRefunds", live, { query: {} })).body).toMatchObject({ total: 0, refunds: [] });
    expect(err(await refund(live, { sale_reference: a.saleReference, reason: "other environment" })).code).toBe("original_sale_not_found");
    for (const id of ["re_", "nope", "re_UPPER", "rr_abc"])
      expect(err(await h.call("refunds", "getRefund", auth, { params: { refund_id: id } })).code).toBe("refund_not_found");
    expect(err(await h.call("refunds", "listRefunds", auth, { query: { limit: 101 } })).code).toBe("invalid_limit");
    expect(err(await refund(auth, { reason: "no sale" })).code).toBe("validation_error");
    expect(err(await refund(auth, { sale_reference: a.saleReference, original_sale_reference: b.saleReference, reason: "two" })).code).toBe("validation_error");
  });
});
