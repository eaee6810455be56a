// Proves reconciliation through real RPC on PostgreSQL: auto-match of a statement built from ledger activity
// matches every line to its own transaction, noise is left unmatched and never mismatched, manual matches and
// unmatches keep one active match per bank line and per transaction (also under concurrent runs), the
// unmatched listing pages both sides, and nothing crosses orgs or environments.
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

interface Activity {
  transactionId: string;
  reference: string;
  /** Signed cents as the bank sees them: income in (+), expense out (−). */
  amount: number;
  date: string;
}

const day = (i: number, shift = 0) => new Date(Date.UTC(2024, 4, 1 + (i % 25) + shift)).toISOString().slice(0, 10);
const decimal = (cents: number) => `${cents < 0 ? "-" : ""}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;
const MAPPING = { date: "Date", amount: "Amount", description: "Description", reference: "Reference", currency: "USD" };

/** Income and expenses on distinct amounts and dates, recorded through the ledger's own operations. */
async function activity(auth: AuthContext, n: number, prefix: string): Promise<Activity[]> {
  const out: Activity[] = [];
  for (let i = 0; i < n; i++) {
    const expense = i % 3 === 0;
    const amount = 1000 + i * 37;
    const reference = `${prefix}-${i}`;
    const r = ok(
      await h.call(expense ? "recordExpense" : "recordIncome", auth, {
        body: { reference_id: reference, amount, date: day(i), description: `${expense ? "Vendor" : "Customer"} ${i}` },
      }),
    );
    out.push({ transactionId: r.body["transaction_id"] as string, reference, amount: expense ? -amount : amount, date: day(i) });
  }
  return out;
}

function statement(lines: { date: string; description: string; reference: string; amount: number }[]): string {
  return `Date,Description,Reference,Amount\n${lines.map((l) => `${l.date},${l.description},${l.reference},${decimal(l.amount)}`).join("\n")}\n`;
}

async function importCsv(auth: AuthContext, csv: string): Promise<void> {
  const r = ok(await h.call("importTransactions", auth, { body: { action: "import", format: "csv", data: csv, mapping: MAPPING, account_name: "Operating" } }));
  expect((r.body["import"] as Record<string, unknown>)["error_count"]).toBe(0);
}

async function autoMatch(auth: AuthContext, body: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return ok(await h.call("autoMatchReconciliation", auth, { body })).body["auto_match"] as Record<string, unknown>;
}

/** Active matches of the org, and how many pair a bank line with a transaction other than the one it reports. */
async function matchFigures(auth: AuthContext, reports: string): Promise<{ active: number; wrong: number }> {
  const [r] = await h.env.adminSql<{ active: string; wrong: string }[]>`
    select count(*) as active,
      count(*) filter (where ${h.env.adminSql.unsafe(reports)} is distinct from t.reference_id) as wrong
    from ledger.reconciliation_matches m
    join ledger.bank_lines b on b.id = m.bank_line_id
    join ledger.transactions t on t.id = m.transaction_id
    where m.org_id = ${auth.org_id} and m.livemode = ${auth.livemode} and m.unmatched_at is null`;
  return { active: Number(r?.active), wrong: Number(r?.wrong) };
}

describe("auto-match", () => {
  it("a statement built from the ledger's own activity matches every line to its transaction", async () => {
    // Proves amounts, signs (cash in/out), dates and references line up with the ledger side.
    const auth = authFor(newOrg());
    const acts = await activity(auth, 40, "inv");
    await importCsv(
      auth,
      statement(acts.map((a, i) => ({ date: day(i, i % 3 === 1 ? 1 : 0), description: `Payment ${a.reference}`, reference: a.reference, amount: a.amount }))),
    );
    const res = await autoMatch(auth);
    expect(res).toMatchObject({
      bank_lines_considered: 40,
      transactions_considered: 40,
      matched: 40,
      unmatched_bank_lines: 0,
      unmatched_transactions: 0,
      skipped_already_matched: 0,
    });
    expect(await matchFigures(auth, "b.reference")).toEqual({ active: 40, wrong: 0 });
    expect(await autoMatch(auth)).toMatchObject({ bank_lines_considered: 0, matched: 0 });
  });

  it("with noise: unrelated lines, far-off dates and unmatched transactions stay unmatched, none mismatched", async () => {
    // Proves the date window and exact amounts keep noise out, and what remains is listed on each side.
    const auth = authFor(newOrg());
    const acts = await activity(auth, 30, "ord");
    const reported = acts
      .slice(0, 20)
      .map((a, i) => ({ date: day(i, (i % 5) - 2), description: `SEPA ${a.reference} transfer`, reference: "", amount: a.amount }));
    const noise = Array.from({ length: 10 }, (_, i) => ({ date: day(i), description: `Card fee ${i}`, reference: `FEE${i}`, amount: -(77_000 + i) }));
    const farOff = acts.slice(20, 25).map((a, i) => ({ date: day(20 + i, -12), description: `Late ${i}`, reference: "", amount: a.amount }));
    await importCsv(auth, statement([...reported, ...noise, ...farOff]));
    const res = await autoMatch(auth, { date_window_days: 3 });
    expect(res).toMatchObject({ bank_lines_considered: 35, matched: 20, unmatched_bank_lines: 15 });
    expect(await matchFigures(auth, "substring(b.description from 'SEPA (\\S+) ')")).toEqual({ active: 20, wrong: 0 });

    const page = ok(await h.call("listUnmatched", auth, { query: { limit: "5" } })).body;
    expect(page).toMatchObject({ bank_lines_total: 15, transactions_total: 10, limit: 5, offset: 0 });
    expect((page["bank_lines"] as unknown[]).length).toBe(5);
    const txns = page["transactions"] as { reference_id: string; amount: number }[];
    // Oldest accounting date first: ord-25…29 are dated May 1–5 (the dates wrap every 25 days), ord-20…24 May 21–25.
    expect(txns.map((t) => t.reference_id)).toEqual(["ord-25", "ord-26", "ord-27", "ord-28", "ord-29"]);
    expect(txns[0]?.amount).toBe(acts[25]?.amount);
    const last = ok(await h.call("listUnmatched", auth, { query: { limit: "5", offset: "10", start_date: "2024-05-01", end_date: "2024-06-30" } })).body;
    expect((last["bank_lines"] as unknown[]).length).toBe(5);
    expect((last["transactions"] as unknown[]).length).toBe(0);
  });

  it("concurrent runs over the same lines match each line and transaction once", async () => {
    // Proves the partial unique indexes arbitrate between runs: the counts add up and no pair is doubled.
    const auth = authFor(newOrg());
    const acts = await activity(auth, 30, "par");
    await importCsv(auth, statement(acts.map((a, i) => ({ date: day(i), description: a.reference, reference: a.reference, amount: a.amount }))));
    const runs = await Promise.all([autoMatch(auth), autoMatch(auth), autoMatch(auth)]);
    expect(runs.reduce((n, r) => n + (r["matched"] as number), 0)).toBe(30);
    expect(await matchFigures(auth, "b.reference")).toEqual({ active: 30, wrong: 0 });
  });
});

describe("manual matches", () => {
  it("match by hand, refuse a second match of either side, unmatch, and keep orgs and environments apart", async () => {
    // Proves the manual-match lifecycle and its error codes.
    const auth = authFor(newOrg());
    const [a, b] = await activity(auth, 2, "man");
    if (a === undefined || b === undefined) throw new Error("no activity");
    await importCsv(
      auth,
      statement([
        { date: a.date, description: "first", reference: "L1", amount: a.amount },
        { date: b.date, description: "second", reference: "L2", amount: 5 },
      ]),
    );
    const lines = ok(await h.call("listUnmatched", auth, {})).body["bank_lines"] as { id: string; reference: string }[];
    const [l1, l2] = [lines.find((l) => l.reference === "L1")?.id ?? "", lines.find((l) => l.reference === "L2")?.id ?? ""];

    const made = ok(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: l1, transaction_id: a.transactionId, note: "checked" } }));
    expect(made.status).toBe(201);
    const match = made.body["match"] as Record<string, unknown>;
    expect(match).toMatchObject({ bank_line_id: l1, transaction_id: a.transactionId, method: "manual", status: "matched", note: "checked" });
    const again = err(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: l1, transaction_id: b.transactionId } }));
    expect(again.code).toBe("bank_line_already_matched");
    expect(again.extra?.["match"]).toMatchObject({ id: match["id"] });
    expect(err(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: l2, transaction_id: a.transactionId } })).code).toBe(
      "transaction_already_matched",
    );
    expect(err(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: "bl_missing", transaction_id: a.transactionId } })).code).toBe(
      "bank_line_not_found",
    );
    expect(err(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: l2, transaction_id: "txn_missing" } })).code).toBe(
      "transaction_not_found",
    );
    expect(err(await h.call("createReconciliationMatch", authFor(newOrg()), { body: { bank_line_id: l2, transaction_id: b.transactionId } })).code).toBe(
      "bank_line_not_found",
    );
    expect(
      err(await h.call("createReconciliationMatch", authFor(auth.org_id, true), { body: { bank_line_id: l2, transaction_id: b.transactionId } })).code,
    ).toBe("bank_line_not_found");
    expect(err(await h.call("deleteReconciliationMatch", authFor(newOrg()), { params: { match_id: match["id"] as string } })).code).toBe("match_not_found");

    const removed = ok(await h.call("deleteReconciliationMatch", auth, { params: { match_id: match["id"] as string } })).body["match"];
    expect(removed).toMatchObject({ id: match["id"], status: "unmatched", unmatched_at: expect.any(String) });
    expect(ok(await h.call("deleteReconciliationMatch", auth, { params: { match_id: match["id"] as string } })).body["match"]).toEqual(removed);
    expect(err(await h.call("deleteReconciliationMatch", auth, { params: { match_id: "rm_missing" } })).code).toBe("match_not_found");
    // Both sides are free again: the line can go to the other transaction, even though the amounts differ.
    expect(ok(await h.call("createReconciliationMatch", auth, { body: { bank_line_id: l1, transaction_id: b.transactionId } })).status).toBe(201);
    const left = ok(await h.call("listUnmatched", auth, {})).body;
    expect(left).toMatchObject({ bank_lines_total: 1, transactions_total: 1 });
    expect((left["transactions"] as { id: string }[])[0]?.id).toBe(a.transactionId);
  });
});
