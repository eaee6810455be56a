// Proves ledger part 2 through real RPC: record-sale, reversals (full, partial, hold first, creator_receivable
// and its recovery), accounting records, get-transactions and reports; every file ends on the invariants.
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../verify/verify.ts";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

async function creator(auth: AuthContext, id: string, split?: number): Promise<void> {
  ok(await h.call("createParticipant", auth, { body: { participant_id: id, ...(split !== undefined ? { default_split_percent: split } : {}) } }));
}

async function balanceOf(auth: AuthContext, id: string): Promise<Record<string, unknown>> {
  return ok(await h.call("getParticipant", auth, { params: { participant_id: id } })).body["participant"] as Record<string, unknown>;
}

const sale = (auth: AuthContext, body: Record<string, unknown>) => h.call("recordSale", auth, { body });
const reverse = (auth: AuthContext, body: Record<string, unknown>) => h.call("reverseTransaction", auth, { body });

describe("record-sale", () => {
  it("splits in basis points with tax and fee payers, holds on request, and a replay is 409 with the sale", async () => {
    // Proves the record-sale answer (docs/api.md, Transactions and accounting), the default split (participant's, else 80), hold_funds and replays.
    const auth = authFor(newOrg());
    await creator(auth, "c1");
    await creator(auth, "c2", 70);
    const first = ok(
      await sale(auth, { reference_id: "s1", creator_id: "c1", amount: 10_000, sales_tax: 1000, processing_fee: 301, processing_fee_paid_by: "split" }),
    );
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      breakdown: { gross_amount: 10_000, processing_fee: 301, net_amount: 8699, creator_amount: 7200 - 150, platform_amount: 1800 - 151, creator_percent: 80 },
      creator_balance: 7050,
    });
    expect(first.body["transaction_id"]).toMatch(/^txn_/);
    const dup = err(
      await sale(auth, { reference_id: "s1", creator_id: "c1", amount: 10_000, sales_tax: 1000, processing_fee: 301, processing_fee_paid_by: "split" }),
    );
    expect(dup.code).toBe("duplicate_reference_id");
    expect(dup.extra).toMatchObject({ existing_transaction_id: first.body["transaction_id"], breakdown: first.body["breakdown"] });
    expect(err(await sale(auth, { reference_id: "s1", creator_id: "c1", amount: 10_001 })).code).toBe("idempotency_conflict");

    const held = ok(await sale(auth, { reference_id: "s2", creator_id: "c2", amount: 999, hold_funds: true }));
    expect(held.body["breakdown"]).toMatchObject({ creator_amount: 699, platform_amount: 300, creator_percent: 70 });
    expect(held.body["hold_id"]).toMatch(/^hold_/);
    expect(await balanceOf(auth, "c2")).toMatchObject({ ledger_balance_cents: 699, held_amount_cents: 699, available_balance_cents: 0 });
    const pct = ok(await sale(auth, { reference_id: "s3", creator_id: "c2", amount: 1000, creator_percent: 2.3 }));
    expect(pct.body["breakdown"]).toMatchObject({ creator_amount: 23, creator_percent: 2.3 });

    // An unknown creator becomes a participant with the default split (sale-unknown-creator.int.test.ts).
    expect(ok(await sale(auth, { reference_id: "s4", creator_id: "ghost", amount: 100 })).body["breakdown"]).toMatchObject({ creator_amount: 80 });
    expect(err(await sale(auth, { reference_id: "s5", creator_id: "c1", amount: 100, sales_tax: 101 })).code).toBe("validation_error");
    const [row] = await h.env
      .adminSql`select gross, creator_amount, refunded_amount, hold_id from ledger.sales where org_id = ${auth.org_id} and sale_reference = 's2'`;
    expect(row).toMatchObject({ gross: "999", creator_amount: "699", refunded_amount: "0", hold_id: held.body["hold_id"] });
  });
});

describe("reverse-transaction", () => {
  it("full reversal of a transfer; a second is duplicate_reversal_reference; partials add up to the whole", async () => {
    // Proves reversals post new entries (never edits), are exactly-once, and partial reversals are cumulative.
    const auth = authFor(newOrg());
    await creator(auth, "a");
    await creator(auth, "b");
    const s = ok(await sale(auth, { reference_id: "fund", creator_id: "a", amount: 10_000, creator_percent: 100 }));
    const t = ok(
      await h.call("transferBetweenWallets", auth, { body: { amount: 1000, reference_id: "t1", from_participant_id: "a", to_participant_id: "b" } }),
    );
    const txn = (t.body["transfer"] as Record<string, unknown>)["transaction_id"];
    const full = ok(await reverse(auth, { transaction_id: txn, reason: "mistake" }));
    expect(full.body).toMatchObject({ reversed_transaction_id: txn, amount: 1000, status: "reversed", remaining_amount: 0 });
    const again = err(await reverse(auth, { transaction_id: txn, reason: "again" }));
    expect(again.code).toBe("duplicate_reversal_reference");
    expect(again.extra?.["existing_transaction_id"]).toBe(full.body["transaction_id"]);
    expect(err(await reverse(auth, { transaction_id: txn, reason: "other key", idempotency_key: "k2" })).code).toBe("duplicate_reversal_reference");
    expect(await balanceOf(auth, "b")).toMatchObject({ ledger_balance_cents: 0 });

    const t2 = ok(
      await h.call("transferBetweenWallets", auth, { body: { amount: 1000, reference_id: "t2", from_participant_id: "a", to_participant_id: "b" } }),
    );
    const txn2 = (t2.body["transfer"] as Record<string, unknown>)["transaction_id"];
    const p1 = ok(await reverse(auth, { transaction_id: txn2, reason: "part", partial_amount: 333 }));
    expect(p1.body).toMatchObject({ amount: 333, status: "partially_reversed", is_partial: true, remaining_amount: 667 });
    expect(err(await reverse(auth, { transaction_id: txn2, reason: "part", partial_amount: 333 })).code).toBe("duplicate_reversal_reference");
    ok(await reverse(auth, { transaction_id: txn2, reason: "part", partial_amount: 333, idempotency_key: "p2" }));
    const over = err(await reverse(auth, { transaction_id: txn2, reason: "too much", partial_amount: 335 }));
    expect(over.code).toBe("reversal_amount_exceeds_remaining");
    expect(over.extra?.["remaining_amount"]).toBe(334);
    const rest = ok(await reverse(auth, { transaction_id: txn2, reason: "rest" }));
    expect(rest.body).toMatchObject({ amount: 334, status: "reversed" });
    expect(await balanceOf(auth, "b")).toMatchObject({ ledger_balance_cents: 0 });
    expect(await balanceOf(auth, "a")).toMatchObject({ ledger_balance_cents: 10_000 });
    expect(err(await reverse(auth, { transaction_id: "txn_nope", reason: "x" })).code).toBe("transaction_not_found");
    expect(err(await reverse(auth, { transaction_id: rest.body["transaction_id"], reason: "x" })).code).toBe("validation_error");
    const [orig] = await h.env.adminSql`select status from ledger.transactions where id = ${s.body["transaction_id"] as string}`;
    expect(orig?.["status"]).toBe("posted");
  });

  it("sale reversal takes the hold first, books a shortfall to creator_receivable, recovered from the next earnings", async () => {
    // Proves the wallet-never-negative rule (docs/architecture.md) for reversals and the receivable recovery in the engine.
    const auth = authFor(newOrg());
    await creator(auth, "cr", 80);
    await creator(auth, "friend");
    const held = ok(await sale(auth, { reference_id: "h1", creator_id: "cr", amount: 1000, hold_funds: true }));
    const part = ok(await reverse(auth, { transaction_id: held.body["transaction_id"], reason: "partial", partial_amount: 250 }));
    expect(part.body).toMatchObject({ hold_amount_used: 200, creator_receivable_amount: 0, remaining_amount: 750 });
    expect(await balanceOf(auth, "cr")).toMatchObject({ ledger_balance_cents: 600, held_amount_cents: 600 });

    const free = ok(await sale(auth, { reference_id: "f1", creator_id: "cr", amount: 1000 }));
    // The creator spends what is available, so reversing this sale cannot come from the wallet.
    ok(await h.call("transferBetweenWallets", auth, { body: { amount: 700, reference_id: "spend", from_participant_id: "cr", to_participant_id: "friend" } }));
    expect(await balanceOf(auth, "cr")).toMatchObject({ ledger_balance_cents: 700, available_balance_cents: 100 });
    const rev = ok(await reverse(auth, { transaction_id: free.body["transaction_id"], reason: "chargeback" }));
    expect(rev.body).toMatchObject({ amount: 1000, hold_amount_used: 0, creator_receivable_amount: 700, status: "reversed" });
    // The wallet keeps its held 600; the ledger balance shows the 700 owed: negative until the next earnings repay it.
    expect(await balanceOf(auth, "cr")).toMatchObject({
      ledger_balance_cents: -100,
      owed_amount_cents: 700,
      held_amount_cents: 600,
      available_balance_cents: 0,
    });
    const [sold] = await h.env.adminSql`select refunded_amount, reversed from ledger.sales where org_id = ${auth.org_id} and sale_reference = 'f1'`;
    expect(sold).toMatchObject({ refunded_amount: "1000", reversed: true });

    // The next earnings repay the receivable before they become available.
    const next = ok(await sale(auth, { reference_id: "n1", creator_id: "cr", amount: 500 }));
    expect(next.body).toMatchObject({ receivable_recovered: 400, creator_balance: 600 });
    const next2 = ok(await sale(auth, { reference_id: "n2", creator_id: "cr", amount: 1000 }));
    expect(next2.body).toMatchObject({ receivable_recovered: 300, creator_balance: 1100 });
    const next3 = ok(await sale(auth, { reference_id: "n3", creator_id: "cr", amount: 100 }));
    expect(next3.body["receivable_recovered"]).toBeUndefined();
    const [recv] = await h.env.adminSql`
      select coalesce(sum(sh.balance), 0)::int as outstanding from ledger.accounts a join ledger.account_balance_shards sh on sh.account_id = a.id
      where a.org_id = ${auth.org_id} and a.account_type = 'creator_receivable' and a.entity_id = 'cr'`;
    expect(recv?.["outstanding"]).toBe(0);
    // Reversing the rest of the held sale releases the remaining hold.
    ok(await reverse(auth, { transaction_id: held.body["transaction_id"], reason: "rest" }));
    expect(await balanceOf(auth, "cr")).toMatchObject({ held_amount_cents: 0, holds: [] });
  });

  it("concurrent full reversals of one sale: exactly one reverses", async () => {
    // Proves the sales row lock: racing reversals (different keys) move money once.
    const auth = authFor(newOrg());
    await creator(auth, "race");
    const s = ok(await sale(auth, { reference_id: "r1", creator_id: "race", amount: 5000 }));
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) => reverse(auth, { transaction_id: s.body["transaction_id"], reason: "race", idempotency_key: `k${i}` })),
    );
    expect(replies.filter((r) => r.ok)).toHaveLength(1);
    expect(replies.filter((r) => !r.ok && r.error.code === "duplicate_reversal_reference")).toHaveLength(5);
    expect(await balanceOf(auth, "race")).toMatchObject({ ledger_balance_cents: 0 });
  });
});

describe("accounting records", () => {
  it("income, expense, bill and its payments, adjustment, opening balance, transfer; replays are 409", async () => {
    // Proves each record posts one balanced transaction with a flat answer and is idempotent on its reference.
    const auth = authFor(newOrg());
    const income = ok(await h.call("recordIncome", auth, { body: { reference_id: "i1", amount: 5000, description: "consulting", category: "services" } }));
    expect(income.body).toMatchObject({ reference_id: "i1", amount: 5000, type: "income" });
    expect(err(await h.call("recordIncome", auth, { body: { reference_id: "i1", amount: 5000, description: "consulting", category: "services" } })).code).toBe(
      "duplicate_reference_id",
    );
    ok(await h.call("recordExpense", auth, { body: { reference_id: "e1", amount: 1200, vendor_name: "AWS" } }));
    const bill = ok(await h.call("recordBill", auth, { body: { reference_id: "b1", amount: 900, vendor_name: "Printer Co", due_date: "2026-12-01" } }));
    expect(bill.body).toMatchObject({ status: "unpaid", amount_due: 900 });
    const billDup = err(await h.call("recordBill", auth, { body: { reference_id: "b1", amount: 900, vendor_name: "Printer Co", due_date: "2026-12-01" } }));
    expect(billDup.code).toBe("duplicate_reference_id");
    expect(billDup.extra?.["bill_id"]).toBe(bill.body["bill_id"]);
    const pay1 = ok(await h.call("payBill", auth, { body: { reference_id: "pb1", bill_id: bill.body["bill_id"], amount: 400 } }));
    expect(pay1.body).toMatchObject({ amount: 400, amount_due: 500, status: "partially_paid" });
    expect(err(await h.call("payBill", auth, { body: { reference_id: "pb2", bill_transaction_id: bill.body["transaction_id"], amount: 501 } })).code).toBe(
      "bill_amount_exceeds_unpaid",
    );
    const pay2 = ok(await h.call("payBill", auth, { body: { reference_id: "pb3", bill_transaction_id: bill.body["transaction_id"] } }));
    expect(pay2.body).toMatchObject({ amount: 500, amount_due: 0, status: "paid" });
    expect(err(await h.call("payBill", auth, { body: { reference_id: "pb4", bill_id: "bill_nope" } })).code).toBe("bill_not_found");

    const adj = ok(
      await h.call("recordAdjustment", auth, {
        body: {
          reference_id: "a1",
          adjustment_type: "reclassification",
          reason: "fix",
          entries: [
            { account_type: "expense", entry_type: "debit", amount: 300 },
            { account_type: "income", entry_type: "debit", amount: 200 },
            { account_type: "platform_cash", entry_type: "credit", amount: 500 },
          ],
        },
      }),
    );
    expect(adj.body).toMatchObject({ amount: 500, debits: 500, credits: 500 });
    expect(
      err(
        await h.call("recordAdjustment", auth, {
          body: {
            reference_id: "a2",
            adjustment_type: "other",
            reason: "bad",
            entries: [
              { account_type: "expense", entry_type: "debit", amount: 300 },
              { account_type: "platform_cash", entry_type: "credit", amount: 200 },
            ],
          },
        }),
      ).code,
    ).toBe("validation_error");
    expect(
      err(
        await h.call("recordAdjustment", auth, {
          body: {
            reference_id: "a3",
            adjustment_type: "other",
            reason: "bad",
            entries: [
              { account_type: "nope", entry_type: "debit", amount: 1 },
              { account_type: "platform_cash", entry_type: "credit", amount: 1 },
            ],
          },
        }),
      ).code,
    ).toBe("validation_error");

    const ob = {
      as_of_date: "2026-01-01",
      balances: [
        { account_type: "platform_cash", balance: 100_000 },
        { account_type: "accounts_payable", balance: 20_000 },
      ],
    };
    const opening = ok(await h.call("recordOpeningBalance", auth, { body: ob }));
    expect(opening.body["reference_id"]).toMatch(/^opening_balance:/);
    expect(err(await h.call("recordOpeningBalance", auth, { body: ob })).code).toBe("duplicate_reference_id");
    const tr = ok(
      await h.call("recordTransfer", auth, {
        body: { from_account_type: "platform_cash", to_account_type: "payouts_in_transit", amount: 700, transfer_type: "payout_reserve" },
      }),
    );
    expect(tr.body).toMatchObject({ amount: 700, transfer_type: "payout_reserve" });

    const tb = ok(await h.call("generateReport", auth, { body: { report_type: "trial_balance" } })).body["report"] as Record<string, unknown>;
    expect(tb["type"]).toBe("trial_balance");
    expect(tb["totals"]).toMatchObject({ balanced: true });
    const accounts = tb["accounts"] as Record<string, unknown>[];
    expect(accounts.find((a) => a["account_type"] === "platform_cash")).toMatchObject({ balance: 100_000 + 5000 - 1200 - 900 - 500 - 700 });
    expect(accounts.find((a) => a["account_type"] === "opening_balance_equity")).toMatchObject({ balance: 80_000 });
    const bs = ok(await h.call("generateReport", auth, { body: { report_type: "balance_sheet" } })).body["report"] as Record<string, unknown>;
    expect(bs["totals"]).toMatchObject({ balanced: true });
    const pl = ok(await h.call("generateReport", auth, { body: { report_type: "profit_loss", start_date: "2020-01-01" } })).body["report"] as Record<
      string,
      unknown
    >;
    expect(pl["net_income"]).toBe(5000 - 200 - (1200 + 900 + 300));
  });
});

describe("accounting dates", () => {
  it("a backdated record counts in reports and date filters by its date, not when it was posted", async () => {
    // Proves effective dates: an expense dated 40 days ago is in that period's P&L and trial balance and in a
    // get-transactions window ending then; records without a date count when they were posted.
    const auth = authFor(newOrg());
    const day = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
    ok(await h.call("recordOpeningBalance", auth, { body: { as_of_date: day(-60), balances: [{ account_type: "platform_cash", balance: 50_000 }] } }));
    ok(await h.call("recordExpense", auth, { body: { reference_id: "old", amount: 1500, vendor_name: "AWS", date: day(-40) } }));
    ok(await h.call("recordIncome", auth, { body: { reference_id: "now", amount: 700 } }));
    ok(
      await h.call("recordAdjustment", auth, {
        body: {
          reference_id: "adj",
          adjustment_type: "accrual",
          reason: "late invoice",
          adjustment_date: day(-39),
          entries: [
            { account_type: "expense", entry_type: "debit", amount: 100 },
            { account_type: "accounts_payable", entry_type: "credit", amount: 100 },
          ],
        },
      }),
    );

    const report = async (body: Record<string, unknown>) => ok(await h.call("generateReport", auth, { body })).body["report"] as Record<string, unknown>;
    // The period 45 to 35 days ago holds the backdated expense and the adjustment, not today's income.
    const then = await report({ report_type: "profit_loss", start_date: day(-45), end_date: day(-35) });
    expect(then["net_income"]).toBe(-(1500 + 100));
    const recent = await report({ report_type: "profit_loss", start_date: day(-30) });
    expect(recent["net_income"]).toBe(700);
    const tbThen = await report({ report_type: "trial_balance", as_of: day(-38) });
    expect(tbThen["totals"]).toMatchObject({ balanced: true });
    const cash = (tbThen["accounts"] as Record<string, unknown>[]).find((a) => a["account_type"] === "platform_cash");
    expect(cash).toMatchObject({ balance: 50_000 - 1500 });
    const tbBefore = await report({ report_type: "trial_balance", as_of: day(-50) });
    expect((tbBefore["accounts"] as Record<string, unknown>[]).find((a) => a["account_type"] === "platform_cash")).toMatchObject({ balance: 50_000 });

    const listed = async (query: Record<string, string>) =>
      (ok(await h.call("getTransactions", auth, { query })).body["transactions"] as Record<string, unknown>[]).map((t) => t["reference_id"]);
    expect(await listed({ start_date: day(-45), end_date: day(-35) })).toEqual(expect.arrayContaining(["old", "adj"]));
    expect(await listed({ start_date: day(-45), end_date: day(-35) })).toHaveLength(2);
    expect(await listed({ start_date: day(-1) })).toEqual(["now"]);
    // The date is part of the request: the same reference with another date is a conflict, not a replay.
    expect(err(await h.call("recordExpense", auth, { body: { reference_id: "old", amount: 1500, vendor_name: "AWS", date: day(-41) } })).code).toBe(
      "idempotency_conflict",
    );
    expect(err(await h.call("recordExpense", auth, { body: { reference_id: "old", amount: 1500, vendor_name: "AWS", date: day(-40) } })).code).toBe(
      "duplicate_reference_id",
    );
  });
});

describe("get-transactions", () => {
  it("filters by creator, type, status and dates, pages 50/100, and includes entries on request", async () => {
    // Proves the listing shape (docs/api.md, Transactions and accounting) and each filter.
    const auth = authFor(newOrg());
    await creator(auth, "x");
    await creator(auth, "y");
    for (let i = 0; i < 3; i++) ok(await sale(auth, { reference_id: `x${i}`, creator_id: "x", amount: 100 }));
    const ys = ok(await sale(auth, { reference_id: "y0", creator_id: "y", amount: 100 }));
    ok(await reverse(auth, { transaction_id: ys.body["transaction_id"], reason: "r" }));
    const all = ok(await h.call("getTransactions", auth, { query: {} })).body;
    expect(all["pagination"]).toEqual({ total: 5, page: 1, per_page: 50, total_pages: 1 });
    expect(ok(await h.call("getTransactions", auth, { query: { creator_id: "x" } })).body["pagination"]).toMatchObject({ total: 3 });
    expect(ok(await h.call("getTransactions", auth, { query: { creator_id: "y" } })).body["pagination"]).toMatchObject({ total: 2 });
    expect(ok(await h.call("getTransactions", auth, { query: { creator_id: "nobody" } })).body["pagination"]).toMatchObject({ total: 0 });
    expect(ok(await h.call("getTransactions", auth, { query: { type: "sale" } })).body["pagination"]).toMatchObject({ total: 4 });
    const reversed = ok(await h.call("getTransactions", auth, { query: { status: "reversed" } })).body["transactions"] as Record<string, unknown>[];
    expect(reversed.map((t) => t["id"])).toEqual([ys.body["transaction_id"]]);
    const page2 = ok(await h.call("getTransactions", auth, { query: { page: "2", per_page: "2" } })).body;
    expect(page2["pagination"]).toEqual({ total: 5, page: 2, per_page: 2, total_pages: 3 });
    expect(page2["transactions"]).toHaveLength(2);
    expect(ok(await h.call("getTransactions", auth, { query: { end_date: "2000-01-01" } })).body["pagination"]).toMatchObject({ total: 0 });
    expect(ok(await h.call("getTransactions", auth, { query: { start_date: "2000-01-01" } })).body["pagination"]).toMatchObject({ total: 5 });
    const withEntries = ok(await h.call("getTransactions", auth, { query: { type: "sale", status: "posted", per_page: "1", include_entries: "true" } })).body[
      "transactions"
    ] as Record<string, unknown>[];
    expect(withEntries[0]).toMatchObject({ transaction_type: "sale", currency: "USD", status: "posted" });
    const entries = withEntries[0]?.["entries"] as Record<string, unknown>[];
    expect(entries.length).toBeGreaterThanOrEqual(4);
    expect(entries[0]).toMatchObject({ entry_type: "debit", account: { account_type: "platform_cash" } });
    expect(err(await h.call("getTransactions", auth, { query: { per_page: "101" } })).code).toBe("invalid_limit");
  });
});

describe("verifyLedger", () => {
  it("passes on everything above, as the superuser and for one org", async () => {
    // Proves the operator's check runs with a superuser connection and that this file left a consistent ledger.
    const report = await verifyLedger(h.env.adminSql);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect((await verifyLedger(h.sql, { orgId: newOrg() })).ok).toBe(true);
  });
});
