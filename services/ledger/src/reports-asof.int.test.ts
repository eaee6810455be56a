// Proves reports from the entries' accounting time: a report as of a past time equals the report generated at
// that time, the GET report reads answer generate-report's figures, backdated records land in their period,
// transaction_history pages in accounting-time order, and the accounting-time index serves the date filter.
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

const report = async (auth: AuthContext, body: Record<string, unknown>) =>
  ok(await h.call("generateReport", auth, { body })).body["report"] as Record<string, unknown>;
const read = async (auth: AuthContext, op: string, query: Record<string, unknown>) =>
  ok(await h.call(op, auth, { query })).body["report"] as Record<string, unknown>;

async function activity(auth: AuthContext, tag: string): Promise<void> {
  ok(await h.call("createParticipant", auth, { body: { participant_id: `c-${tag}` } }));
  ok(await h.call("recordSale", auth, { body: { reference_id: `sale-${tag}`, creator_id: `c-${tag}`, amount: 10_000, processing_fee: 290, sales_tax: 500 } }));
  ok(await h.call("recordIncome", auth, { body: { reference_id: `inc-${tag}`, amount: 2_500 } }));
  ok(await h.call("recordExpense", auth, { body: { reference_id: `exp-${tag}`, amount: 1_200 } }));
}

describe("reports as of a past time", () => {
  it("equal the reports generated at that time, through generate-report and the GET reads", async () => {
    // Proves the as-of cut-off uses the accounting time of each transaction and nothing posted later.
    const auth = authFor(newOrg());
    await activity(auth, "a");
    const tb = await report(auth, { report_type: "trial_balance" });
    const bs = await report(auth, { report_type: "balance_sheet" });
    const pl = await report(auth, { report_type: "profit_loss", start_date: "2000-01-01" });
    expect(tb["totals"]).toMatchObject({ balanced: true });
    expect((bs["totals"] as Record<string, unknown>)["balanced"]).toBe(true);
    expect(pl["net_income"]).not.toBe(0);

    await activity(auth, "b");
    const later = await report(auth, { report_type: "trial_balance" });
    expect(later["accounts"]).not.toEqual(tb["accounts"]);

    expect(await report(auth, { report_type: "trial_balance", as_of: tb["as_of"] })).toEqual(tb);
    expect(await report(auth, { report_type: "balance_sheet", as_of: bs["as_of"] })).toEqual(bs);
    expect(await report(auth, { report_type: "profit_loss", start_date: "2000-01-01", end_date: pl["end_date"] })).toEqual(pl);
    expect(await read(auth, "getTrialBalance", { as_of_date: tb["as_of"] })).toEqual(tb);
    expect(await read(auth, "getBalanceSheet", { as_of_date: bs["as_of"] })).toEqual(bs);
    expect(await read(auth, "getProfitLoss", { start_date: "2000-01-01", end_date: pl["end_date"] })).toEqual(pl);
    const now = await read(auth, "getTrialBalance", {});
    expect(now["accounts"]).toEqual(later["accounts"]);
  });

  it("a backdated record counts in its own period; transaction_history pages by accounting time", async () => {
    // Proves effective dates drive the reports and the history order.
    const auth = authFor(newOrg());
    await activity(auth, "now");
    ok(await h.call("recordExpense", auth, { body: { reference_id: "old-rent", amount: 4_000, date: "2020-03-15" } }));
    const then = await read(auth, "getProfitLoss", { start_date: "2020-01-01", end_date: "2020-12-31" });
    expect(then).toMatchObject({ net_income: -4_000, expenses: { total: 4_000 }, revenue: { total: 0 } });
    const tb2020 = await read(auth, "getTrialBalance", { as_of_date: "2020-12-31" });
    expect(tb2020["totals"]).toEqual({ debits: 4_000, credits: 4_000, balanced: true });

    const page1 = await report(auth, { report_type: "transaction_history", per_page: 2 });
    expect(page1["pagination"]).toEqual({ total: 4, page: 1, per_page: 2, total_pages: 2 });
    const first = (page1["transactions"] as Record<string, unknown>[])[0];
    expect(first).toMatchObject({ reference_id: "old-rent", transaction_type: "expense", accounted_at: "2020-03-15T00:00:00.000Z" });
    expect((first?.["entries"] as unknown[]).length).toBe(2);
    const page2 = await report(auth, { report_type: "transaction_history", per_page: 2, page: 2 });
    expect((page2["transactions"] as Record<string, unknown>[]).map((t) => t["reference_id"])).toEqual(["inc-now", "exp-now"]);
    const only2020 = await report(auth, { report_type: "transaction_history", start_date: "2020-01-01", end_date: "2020-12-31" });
    expect((only2020["transactions"] as Record<string, unknown>[]).map((t) => t["reference_id"])).toEqual(["old-rent"]);
  });

  it("the accounting-time filter is served by transactions_accounted_idx", async () => {
    // Proves the planner reads an org's transactions up to a past time through the index (2,000 transactions over
    // two years; a report as of the first month reads a thirtieth of them) and that the report agrees.
    const auth = authFor(newOrg());
    const start = Date.UTC(2022, 0, 1);
    // Fifty at a time: one org's share of the ledger's slots (fair admission) is a quarter of them.
    for (let from = 0; from < 2000; from += 50) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, k) => {
          const i = from + k;
          return h.postRpc({
            org_id: auth.org_id,
            livemode: false,
            kind: "income",
            reference_id: `p${i}`,
            postings: [{ debit: { system: "platform_cash" }, credit: { system: "income" }, amount: 100 }],
            effective_date: new Date(start + (i % 730) * 86_400_000).toISOString(),
          });
        }),
      );
      for (const r of replies) ok(r);
    }
    await h.env.adminSql`analyze ledger.transactions`;
    const cutoff = new Date(start + 24 * 86_400_000);
    const plan = await h.env.adminSql<{ "QUERY PLAN": string }[]>`
      explain select tr.id from ledger.transactions tr
      where tr.org_id = ${auth.org_id} and tr.livemode = false and coalesce(tr.effective_at, tr.created_at) <= ${cutoff}`;
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    expect(text).toMatch(/(Index Scan using|Index Only Scan using|Bitmap Index Scan on) transactions_accounted_idx/);
    expect(text).toMatch(/COALESCE\(effective_at, created_at\) <=/);
    const tb = await read(auth, "getTrialBalance", { as_of_date: cutoff.toISOString() });
    // Days 0..24 of each of the two years' cycles: 25 days × (2000 / 730 ≈ 2.7 cycles) → 3 + 3 + … postings per day.
    const expected = Array.from({ length: 2000 }, (_, i) => i % 730).filter((d) => d <= 24).length * 100;
    expect(tb["totals"]).toEqual({ debits: expected, credits: expected, balanced: true });
  });
});
