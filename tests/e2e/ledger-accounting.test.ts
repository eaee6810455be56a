// Proves ledger part 2 black-box through the gateway: record-sale (201, 409 envelope with the existing sale),
// reverse-transaction (409 duplicate_reversal_reference), get-transactions paging, the trial balance, scopes,
// and a consistent ledger afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../services/ledger/src/verify/verify.ts";
import { call, startStack, type Stack } from "./stack.ts";

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ services: ["ledger"] });
});
afterAll(async () => {
  await stack?.stop();
});

const post = (path: string, body: unknown, key = stack.testKey) => call(stack.baseUrl, "POST", path, { key, body });

describe("ledger accounting over HTTP", () => {
  it("record-sale, its replay, a reversal and its replay, listing and the trial balance", async () => {
    // Proves the wire shapes of docs/api.md, Transactions and accounting, and status codes end to end (gateway → NATS → ledger → PostgreSQL).
    expect((await post("/v1/participants", { participant_id: "e2e_creator", default_split_percent: 75 })).status).toBe(201);
    const body = { reference_id: "order-1", creator_id: "e2e_creator", amount: 2000, processing_fee: 88, description: "ebook" };
    const sale = await post("/v1/record-sale", body);
    expect(sale.status).toBe(201);
    expect(sale.body).toMatchObject({
      success: true,
      breakdown: { gross_amount: 2000, processing_fee: 88, net_amount: 1912, creator_amount: 1500, platform_amount: 412, creator_percent: 75 },
      creator_balance: 1500,
    });
    const txn = sale.body["transaction_id"];
    const replay = await post("/v1/record-sale", body);
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ success: false, error_code: "duplicate_reference_id", existing_transaction_id: txn });

    const rev = await post("/v1/reverse-transaction", { transaction_id: txn, reason: "refunded off-platform" });
    expect(rev.status).toBe(201);
    expect(rev.body).toMatchObject({ success: true, reversed_transaction_id: txn, amount: 2000, status: "reversed" });
    const again = await post("/v1/reverse-transaction", { transaction_id: txn, reason: "again" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: "duplicate_reversal_reference", existing_transaction_id: rev.body["transaction_id"] });

    const list = await call(stack.baseUrl, "GET", "/v1/get-transactions?per_page=1&include_entries=true", { key: stack.testKey });
    expect(list.status).toBe(200);
    expect(list.body["pagination"]).toEqual({ total: 2, page: 1, per_page: 1, total_pages: 2 });
    expect((list.body["transactions"] as Record<string, unknown>[])[0]).toMatchObject({ transaction_type: "reversal", status: "posted" });
    const tooBig = await call(stack.baseUrl, "GET", "/v1/get-transactions?per_page=101", { key: stack.testKey });
    expect(tooBig.body).toMatchObject({ error_code: "invalid_limit" });

    const tb = await post("/v1/generate-report", { report_type: "trial_balance" });
    expect(tb.status).toBe(200);
    expect(tb.body["report"]).toMatchObject({ type: "trial_balance", totals: { balanced: true } });
  });

  it("accounting writes need the accounting scope; a read key may still generate reports", async () => {
    // Proves fail-closed scopes for the new operations (docs/api.md, Scopes).
    const { api_key } = await stack.key({ scopes: ["read"] });
    expect((await post("/v1/record-income", { reference_id: "i1", amount: 100 }, api_key)).body).toMatchObject({ error_code: "insufficient_scope" });
    expect((await post("/v1/generate-report", { report_type: "profit_loss" }, api_key)).status).toBe(200);
    const income = await post("/v1/record-income", { reference_id: "i1", amount: 100 });
    expect(income.status).toBe(201);
    expect(income.body).toMatchObject({ success: true, amount: 100, type: "income" });
    const report = await verifyLedger(stack.env.adminSql, { orgId: stack.orgId });
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
