// AR and AP aging from the ledger's entries as of three dates, against a table computed by hand (a reversed bill
// owes nothing from its reversal on, a reversed payment owes again); a bank statement
// line naming an invoice's number pays it during auto-match, once however many runs see it; and the sandbox
// clock making an open invoice overdue (its status, invoice.overdue, and the aging's default date).
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "invoicing"] });
}, 120_000);
afterAll(async () => {
  await s?.stop();
});

async function ok(key: string, method: string, path: string, body?: unknown, status = 200): Promise<Body> {
  const r = await call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

async function newKey(): Promise<string> {
  const { org_id } = await createOrg(s.env.adminSql, { name: `Aging ${Date.now().toString(36)}` });
  return (await s.key({ orgId: org_id })).api_key;
}

async function sentInvoice(key: string, b: { customer: string; customer_id?: string; issue: string; due: string; lines: Body[] }): Promise<Body> {
  const created = (
    await ok(
      key,
      "POST",
      "/v1/invoices",
      {
        customer_name: b.customer,
        ...(b.customer_id === undefined ? {} : { customer_id: b.customer_id }),
        issue_date: b.issue,
        due_date: b.due,
        line_items: b.lines,
      },
      201,
    )
  )["invoice"] as Body;
  return (await ok(key, "POST", `/v1/invoices/${String(created["id"])}/send`, {}))["invoice"] as Body;
}

const zero = { current: 0, days_1_30: 0, days_31_60: 0, days_61_90: 0, over_90: 0 };

describe("aging", () => {
  it("AR and AP as of three dates match the table computed by hand", { timeout: 60_000 }, async () => {
    const key = await newKey();
    // Invoices: A (Acme) 10,000 due 2024-01-31, paid in full on 2024-06-01; B (Acme) 5,000 due 2024-03-31, 2,000
    // paid on 2024-04-10; C (Beta) 2.5 × 3,020 = 7,550 issued 2024-05-01, due 2024-06-15; D a draft (never counted).
    const a = await sentInvoice(key, {
      customer: "Acme",
      customer_id: "cust_acme",
      issue: "2024-01-01",
      due: "2024-01-31",
      lines: [{ description: "A", unit_price_cents: 10_000 }],
    });
    const b = await sentInvoice(key, {
      customer: "Acme",
      customer_id: "cust_acme",
      issue: "2024-03-01",
      due: "2024-03-31",
      lines: [{ description: "B", quantity: 2, unit_price_cents: 2_500 }],
    });
    const c = await sentInvoice(key, {
      customer: "Beta",
      issue: "2024-05-01",
      due: "2024-06-15",
      lines: [{ description: "C", quantity: "2.5", unit_price_cents: 3_020 }],
    });
    expect(c["total_cents"]).toBe(7_550);
    await ok(key, "POST", "/v1/invoices", { customer_name: "Draft", line_items: [{ description: "D", unit_price_cents: 99_999 }] }, 201);
    await ok(key, "POST", `/v1/invoices/${String(b["id"])}/record-payment`, { amount: 2_000, reference_id: "b-1", paid_at: "2024-04-10T12:00:00Z" }, 201);
    await ok(key, "POST", `/v1/invoices/${String(a["id"])}/record-payment`, { amount: 10_000, reference_id: "a-1", paid_at: "2024-06-01T09:00:00Z" }, 201);
    // Bills: Paper Co 4,000 dated 2024-02-01 due 2024-03-01; Ink Ltd 2,500 dated 2024-05-01 due 2024-05-31.
    const paper = await ok(
      key,
      "POST",
      "/v1/record-bill",
      { reference_id: "bill-paper", amount: 4_000, vendor_name: "Paper Co", date: "2024-02-01", due_date: "2024-03-01" },
      201,
    );
    await ok(
      key,
      "POST",
      "/v1/record-bill",
      { reference_id: "bill-ink", amount: 2_500, vendor_name: "Ink Ltd", date: "2024-05-01", due_date: "2024-05-31" },
      201,
    );

    const ar = async (date: string) => (await ok(key, "GET", `/v1/ar-aging?as_of_date=${date}`))["aging"] as Body;
    const ap = async (date: string) => (await ok(key, "GET", `/v1/ap-aging?as_of_date=${date}`))["aging"] as Body;

    // 2024-03-31: A 60 days past due (31–60); B due that day (current); C not yet issued.
    expect(await ar("2024-03-31")).toEqual({
      as_of_date: "2024-03-31",
      buckets: { ...zero, current: 5_000, days_31_60: 10_000 },
      total_cents: 15_000,
      rows: [{ customer_id: "cust_acme", customer_name: "Acme", ...zero, current: 5_000, days_31_60: 10_000, total_cents: 15_000 }],
    });
    // 2024-05-15: A 105 days (over 90); B 3,000 left, 45 days (31–60); C current.
    expect(await ar("2024-05-15")).toEqual({
      as_of_date: "2024-05-15",
      buckets: { ...zero, current: 7_550, days_31_60: 3_000, over_90: 10_000 },
      total_cents: 20_550,
      rows: [
        { customer_id: "cust_acme", customer_name: "Acme", ...zero, days_31_60: 3_000, over_90: 10_000, total_cents: 13_000 },
        { customer_id: null, customer_name: "Beta", ...zero, current: 7_550, total_cents: 7_550 },
      ],
    });
    // 2024-07-31: A paid; B 122 days (over 90); C 46 days (31–60).
    expect(await ar("2024-07-31")).toMatchObject({ buckets: { ...zero, days_31_60: 7_550, over_90: 3_000 }, total_cents: 10_550 });

    // AP at the same dates: Paper Co 30, 75, 152 days past due; Ink Ltd not yet, current, 61 days.
    expect(await ap("2024-03-31")).toEqual({
      as_of_date: "2024-03-31",
      buckets: { ...zero, days_1_30: 4_000 },
      total_cents: 4_000,
      rows: [{ vendor_name: "Paper Co", ...zero, days_1_30: 4_000, total_cents: 4_000 }],
    });
    expect(await ap("2024-05-15")).toMatchObject({ buckets: { ...zero, current: 2_500, days_61_90: 4_000 }, total_cents: 6_500 });
    expect(await ap("2024-07-31")).toMatchObject({
      buckets: { ...zero, days_61_90: 2_500, over_90: 4_000 },
      rows: [
        { vendor_name: "Ink Ltd", days_61_90: 2_500, total_cents: 2_500 },
        { vendor_name: "Paper Co", over_90: 4_000, total_cents: 4_000 },
      ],
    });
    // Paying 1,000 of Paper Co today changes today's aging, not the past's.
    const payPaper = await ok(key, "POST", "/v1/pay-bill", { reference_id: "pay-paper", bill_id: paper["bill_id"], amount: 1_000 }, 201);
    expect(((await ok(key, "GET", "/v1/ap-aging"))["aging"] as Body)["total_cents"]).toBe(5_500);
    expect((await ap("2024-07-31"))["total_cents"]).toBe(6_500);
    // Glue Inc 1,500 dated 2024-07-01 due 2024-07-15, then reversed today: owed on 2024-07-31 (16 days, 1–30),
    // owed nothing today. Reversing the Paper Co payment makes its 1,000 owed again today.
    const glue = await ok(
      key,
      "POST",
      "/v1/record-bill",
      { reference_id: "bill-glue", amount: 1_500, vendor_name: "Glue Inc", date: "2024-07-01", due_date: "2024-07-15" },
      201,
    );
    expect(((await ok(key, "GET", "/v1/ap-aging"))["aging"] as Body)["total_cents"]).toBe(7_000);
    await ok(key, "POST", "/v1/reverse-transaction", { transaction_id: glue["transaction_id"], reason: "entered twice" }, 201);
    const today = (await ok(key, "GET", "/v1/ap-aging"))["aging"] as Body;
    expect(today["total_cents"]).toBe(5_500);
    expect((today["rows"] as Body[]).map((r) => r["vendor_name"])).toEqual(["Ink Ltd", "Paper Co"]);
    expect(await ap("2024-07-31")).toMatchObject({ buckets: { ...zero, days_1_30: 1_500, days_61_90: 2_500, over_90: 4_000 }, total_cents: 8_000 });
    await ok(key, "POST", "/v1/reverse-transaction", { transaction_id: payPaper["transaction_id"], reason: "payment bounced" }, 201);
    expect(await ap(today["as_of_date"] as string)).toMatchObject({
      total_cents: 6_500,
      rows: [
        { vendor_name: "Ink Ltd", total_cents: 2_500 },
        { vendor_name: "Paper Co", total_cents: 4_000 },
      ],
    });
    const bad = await call(s.baseUrl, "GET", "/v1/ar-aging?as_of_date=2024-02-30", { key });
    expect(bad.status).toBe(400);
    expect(bad.body["error_code"]).toBe("validation_error");
  });
});

describe("bank statement auto-match", () => {
  it("a bank line naming an invoice's number pays it, once, and is matched to the payment", { timeout: 60_000 }, async () => {
    const key = await newKey();
    const inv = await sentInvoice(key, {
      customer: "Bank Payer",
      issue: "2024-08-01",
      due: "2024-08-31",
      lines: [{ description: "b", unit_price_cents: 12_345 }],
    });
    const number = String(inv["number"]);
    const csv = `Date,Text,Ref,Amount\n2024-08-20,Payment for ${number} thank you,BNK1,123.45\n2024-08-21,Coffee,BNK2,-4.50\n`;
    const mapping = { date: "Date", description: "Text", reference: "Ref", amount: "Amount", currency: "USD" };
    expect((await ok(key, "POST", "/v1/import-transactions", { action: "import", format: "csv", data: csv, mapping }, 201))["import"]).toMatchObject({
      imported: 2,
    });
    const run = (await ok(key, "POST", "/v1/reconciliations/auto-match", {}))["auto_match"] as Body;
    expect(run).toMatchObject({ matched: 1, unmatched_bank_lines: 1 });
    const paid = (await ok(key, "GET", `/v1/invoices/${String(inv["id"])}`))["invoice"] as Body;
    expect(paid).toMatchObject({ status: "paid", amount_paid_cents: 12_345 });
    const payments = paid["payments"] as Body[];
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({
      source: "bank_line",
      paid_at: "2024-08-20T00:00:00.000Z",
      transaction_id: (run["matches"] as Body[])[0]?.["transaction_id"],
    });
    // Another run sees nothing new, and the invoice is not paid twice.
    expect((await ok(key, "POST", "/v1/reconciliations/auto-match", {}))["auto_match"]).toMatchObject({ matched: 0 });
    expect(((await ok(key, "GET", `/v1/invoices/${String(inv["id"])}`))["invoice"] as Body)["payments"]).toHaveLength(1);
  });
});

describe("the sandbox clock", () => {
  it("advancing it past the due date makes an open invoice overdue and moves today's aging bucket", { timeout: 60_000 }, async () => {
    const key = await newKey();
    const clock = (await ok(key, "GET", "/v1/sandbox/clock"))["clock"] as Body;
    const today = String(clock["now"]).slice(0, 10);
    const inv = await sentInvoice(key, { customer: "Late", issue: today, due: today, lines: [{ description: "l", unit_price_cents: 800 }] });
    const id = String(inv["id"]);
    expect(inv["status"]).toBe("sent");
    expect(((await ok(key, "GET", "/v1/ar-aging"))["aging"] as Body)["buckets"]).toEqual({ ...zero, current: 800 });
    await ok(key, "POST", "/v1/sandbox/clock/advance", { by_seconds: 40 * 86_400 });
    await waitFor(async () => ((await ok(key, "GET", `/v1/invoices/${id}`))["invoice"] as Body)["status"] === "overdue", { timeoutMs: 20_000 });
    expect(((await ok(key, "GET", "/v1/invoices?status=overdue"))["invoices"] as Body[]).map((i) => i["id"])).toEqual([id]);
    expect(((await ok(key, "GET", "/v1/ar-aging"))["aging"] as Body)["buckets"]).toEqual({ ...zero, days_31_60: 800 });
    // invoice.overdue is written once, by the job the advance woke.
    await waitFor(
      async () => {
        const [row] = await s.env.adminSql<
          { n: number }[]
        >`select count(*)::int as n from invoicing.outbox where type = 'invoice.overdue' and payload->'data'->'invoice'->>'id' = ${id}`;
        return row?.n === 1;
      },
      { timeoutMs: 20_000 },
    );
  });
});
