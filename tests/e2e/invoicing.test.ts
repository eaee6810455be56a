// Invoicing through the gateway on the real ledger: an invoice created, sent, paid in two parts and paid in full
// with the trial balance balanced after each step and the receivable following; numbers without gaps per org and
// environment; a sent unpaid invoice voided reverses its receivable; bad input answered with precise 4xx codes and
// nothing posted; 20 concurrent payments of an invoice worth 10 of them pay exactly 10; receive-payment as the SDK
// calls it; the invoice.* events reaching a webhook endpoint; and each org and environment seeing only its own.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { verifyLedger } from "../../services/ledger/src/verify/verify.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
let receiver: http.Server;
const deliveries: { type: string; sequence: number; data: Body }[] = [];

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "webhooks", "invoicing"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  receiver = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      deliveries.push(JSON.parse(body) as { type: string; sequence: number; data: Body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
}, 120_000);
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await s?.stop();
});

const api = (method: string, path: string, key: string, body?: unknown) => call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

async function ok(key: string, method: string, path: string, body?: unknown, status = 200): Promise<Body> {
  const r = await api(method, path, key, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

function expectError(r: { status: number; body: Body }, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body).toMatchObject({ success: false, error_code: code, error: expect.any(String), request_id: expect.stringMatching(/^req_/) });
}

async function newOrgKeys(): Promise<{ orgId: string; sandbox: string; live: string }> {
  const { org_id } = await createOrg(s.env.adminSql, { name: `Invoicing ${Date.now().toString(36)}` });
  return { orgId: org_id, sandbox: (await s.key({ orgId: org_id })).api_key, live: (await s.key({ orgId: org_id, environment: "live" })).api_key };
}

/** The trial balance, checked balanced, and the receivable of one invoice in it (0 when it has no account). */
async function trialBalance(key: string, invoiceId: string): Promise<{ receivable: number; income: number }> {
  const report = (await ok(key, "POST", "/v1/generate-report", { report_type: "trial_balance" }))["report"] as Body;
  expect(report["totals"]).toMatchObject({ balanced: true });
  const accounts = report["accounts"] as { account_type: string; entity_id: string | null; balance: number }[];
  const receivable = accounts.find((a) => a.account_type === "accounts_receivable" && a.entity_id === invoiceId)?.balance ?? 0;
  const income = accounts.filter((a) => a.account_type === "income").reduce((n, a) => n + a.balance, 0);
  return { receivable, income };
}

async function transactionCount(orgId: string): Promise<number> {
  const [row] = await s.env.adminSql<{ n: number }[]>`select count(*)::int as n from ledger.transactions where org_id = ${orgId}`;
  return row?.n ?? 0;
}

const LINES = [
  { description: "Design work", quantity: 3, unit_price_cents: 12_500 },
  { description: "Hosting, half a month", quantity: "0.5", unit_price_cents: 4_999 },
];
// 3 × 12,500 + 0.5 × 4,999 = 37,500 + 2,499.5 → 2,500 (half up) = 40,000.
const TOTAL = 40_000;

describe("an invoice's life", () => {
  it("create → send → two partial payments → paid, the trial balance balanced and the receivable exact after each step", { timeout: 60_000 }, async () => {
    const { orgId, sandbox: key } = await newOrgKeys();
    const endpoint = await ok(key, "POST", "/v1/webhooks", { action: "create", url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }, 201);
    expect(endpoint["success"]).toBe(true);
    const created = (
      await ok(key, "POST", "/v1/invoices", { customer_name: "Ada Studio", customer_id: "cust_ada", line_items: LINES, due_date: "2099-01-31" }, 201)
    )["invoice"] as Body;
    expect(created).toMatchObject({
      number: "INV-000001",
      status: "draft",
      total_cents: TOTAL,
      amount_paid_cents: 0,
      amount_due_cents: TOTAL,
      transaction_id: null,
    });
    expect((created["line_items"] as Body[]).map((l) => [l["quantity"], l["amount_cents"]])).toEqual([
      ["3", 37_500],
      ["0.5", 2_500],
    ]);
    expect(String(created["hosted_url"])).toMatch(new RegExp(`/v1/invoices/${String(created["id"])}/view$`));
    const id = String(created["id"]);
    expect(await transactionCount(orgId)).toBe(0);

    const sent = (await ok(key, "POST", `/v1/invoices/${id}/send`, {}))["invoice"] as Body;
    expect(sent).toMatchObject({ status: "sent", transaction_id: expect.stringMatching(/^txn_/) });
    expect(await trialBalance(key, id)).toEqual({ receivable: TOTAL, income: TOTAL });

    const first = await ok(key, "POST", `/v1/invoices/${id}/record-payment`, { amount: 15_000, reference_id: `pay-1-${id}` }, 201);
    expect(first).toMatchObject({
      invoice: { status: "partially_paid", amount_paid_cents: 15_000, amount_due_cents: 25_000 },
      payment: { amount_cents: 15_000 },
    });
    expect(await trialBalance(key, id)).toEqual({ receivable: 25_000, income: TOTAL });

    const second = await ok(key, "POST", `/v1/invoices/${id}/record-payment`, { amount: 25_000, reference_id: `pay-2-${id}` }, 201);
    expect(second).toMatchObject({ invoice: { status: "paid", amount_paid_cents: TOTAL, amount_due_cents: 0, paid_at: expect.any(String) } });
    expect(await trialBalance(key, id)).toEqual({ receivable: 0, income: TOTAL });

    // A replay of a payment is 409 with the payment; no second movement.
    const again = await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 25_000, reference_id: `pay-2-${id}` });
    expectError(again, 409, "duplicate_reference_id");
    expect(again.body).toMatchObject({ payment: { reference_id: `pay-2-${id}` }, existing_transaction_id: expect.stringMatching(/^txn_/) });
    expectError(await api("POST", `/v1/invoices/${id}/void`, key, {}), 409, "invoice_paid");
    expectError(await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 1, reference_id: `pay-3-${id}` }), 409, "invoice_paid");
    expect(await transactionCount(orgId)).toBe(3);

    const read = (await ok(key, "GET", `/v1/invoices/${id}`))["invoice"] as Body;
    expect((read["payments"] as Body[]).map((p) => p["amount_cents"])).toEqual([15_000, 25_000]);
    await waitFor(() => deliveries.filter((d) => (d.data["invoice"] as Body | undefined)?.["id"] === id).length >= 5, { timeoutMs: 20_000 });
    // Deliveries of an unordered endpoint may arrive in any order; `sequence` is the order invoicing wrote them in.
    const types = deliveries
      .filter((d) => (d.data["invoice"] as Body | undefined)?.["id"] === id)
      .sort((a, b) => a.sequence - b.sequence)
      .map((d) => d.type);
    expect(types).toEqual(["invoice.created", "invoice.sent", "invoice.payment_recorded", "invoice.payment_recorded", "invoice.paid"]);
    expect((await verifyLedger(s.env.adminSql, { orgId })).violations).toEqual([]);
  });

  it("voiding a sent, unpaid invoice reverses its receivable; a void invoice takes no payment and is not voided twice", async () => {
    const { sandbox: key } = await newOrgKeys();
    const inv = (
      await ok(key, "POST", "/v1/invoices", { customer_name: "Void Co", line_items: [{ description: "x", quantity: 2, unit_price_cents: 1_000 }] }, 201)
    )["invoice"] as Body;
    const id = String(inv["id"]);
    await ok(key, "POST", `/v1/invoices/${id}/send`, {});
    expect(await trialBalance(key, id)).toEqual({ receivable: 2_000, income: 2_000 });
    const voided = (await ok(key, "POST", `/v1/invoices/${id}/void`, {}))["invoice"] as Body;
    expect(voided).toMatchObject({ status: "void", amount_due_cents: 0, void_transaction_id: expect.stringMatching(/^txn_/) });
    expect(await trialBalance(key, id)).toEqual({ receivable: 0, income: 0 });
    expectError(await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 100, reference_id: `late-${id}` }), 409, "invoice_void");
    expectError(await api("POST", `/v1/invoices/${id}/void`, key, {}), 409, "invoice_void");
    expectError(await api("POST", `/v1/invoices/${id}/send`, key, {}), 409, "invoice_void");
    // A draft is voided without posting anything.
    const draft = (await ok(key, "POST", "/v1/invoices", { customer_name: "Void Co", line_items: [{ description: "y", unit_price_cents: 500 }] }, 201))[
      "invoice"
    ] as Body;
    expect(((await ok(key, "POST", `/v1/invoices/${String(draft["id"])}/void`, {}))["invoice"] as Body)["void_transaction_id"]).toBeNull();
  });

  it("numbers invoices per org and environment without gaps, even when creates race", async () => {
    const { sandbox, live } = await newOrgKeys();
    const make = (key: string, i: number) =>
      api("POST", "/v1/invoices", key, { customer_name: `C${i}`, line_items: [{ description: "n", unit_price_cents: 100 + i }] });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => make(sandbox, i)));
    const numbers = results.map((r) => String((r.body["invoice"] as Body)["number"])).sort();
    expect(numbers).toEqual(Array.from({ length: 12 }, (_, i) => `INV-${String(i + 1).padStart(6, "0")}`));
    // A refused create takes no number.
    expectError(await api("POST", "/v1/invoices", sandbox, { customer_name: "bad", line_items: [] }), 400, "invoice_line_items_required");
    expect(((await make(sandbox, 99)).body["invoice"] as Body)["number"]).toBe("INV-000013");
    expect(((await make(live, 0)).body["invoice"] as Body)["number"]).toBe("INV-000001");
  });
});

describe("bad input", () => {
  it("no lines, a negative or zero quantity, too many places, an unknown invoice, paying a draft: precise 4xx, nothing posted", async () => {
    const { orgId, sandbox: key } = await newOrgKeys();
    const create = (line_items: unknown) => api("POST", "/v1/invoices", key, { customer_name: "Bad", line_items });
    expectError(await create([]), 400, "invoice_line_items_required");
    expectError(await create([{ description: "neg", quantity: -1, unit_price_cents: 100 }]), 400, "invalid_quantity");
    expectError(await create([{ description: "zero", quantity: 0, unit_price_cents: 100 }]), 400, "invalid_quantity");
    expectError(await create([{ description: "places", quantity: "1.23456", unit_price_cents: 100 }]), 400, "invalid_quantity");
    expectError(await create([{ description: "price", quantity: 1, unit_price_cents: -5 }]), 400, "validation_error");
    expectError(
      await api("POST", "/v1/invoices", key, {
        customer_name: "Bad",
        line_items: [{ description: "d", unit_price_cents: 1 }],
        issue_date: "2024-02-10",
        due_date: "2024-02-01",
      }),
      400,
      "validation_error",
    );
    expectError(await api("GET", "/v1/invoices/inv_doesnotexist", key), 404, "invoice_not_found");
    expectError(await api("POST", "/v1/invoices/inv_doesnotexist/send", key, {}), 404, "invoice_not_found");
    expectError(await api("POST", "/v1/invoices/inv_doesnotexist/record-payment", key, { amount: 100, reference_id: "r1" }), 404, "invoice_not_found");
    expectError(await api("POST", "/v1/invoices/not-an-id/void", key, {}), 404, "invoice_not_found");
    const draft = (await ok(key, "POST", "/v1/invoices", { customer_name: "Draft", line_items: [{ description: "d", unit_price_cents: 1_000 }] }, 201))[
      "invoice"
    ] as Body;
    const id = String(draft["id"]);
    expectError(await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 100, reference_id: "r2" }), 409, "invoice_not_sent");
    await ok(key, "POST", `/v1/invoices/${id}/send`, {});
    expectError(await api("POST", `/v1/invoices/${id}/send`, key, {}), 409, "invoice_already_sent");
    const over = await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 1_001, reference_id: "r3" });
    expectError(over, 409, "payment_exceeds_amount_due");
    expect(over.body["amount_due_cents"]).toBe(1_000);
    expectError(await api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: 0, reference_id: "r4" }), 400, "validation_error");
    expect(await transactionCount(orgId)).toBe(1);
    expect((await api("GET", "/v1/invoices?status=bogus", key)).status).toBe(400);
    expectError(await api("GET", "/v1/invoices?limit=0", key), 400, "invalid_limit");
  });
});

describe("payments", () => {
  it("20 concurrent payments of X on an invoice of 10 X: exactly 10 succeed, the rest are refused, the receivable ends at 0", { timeout: 60_000 }, async () => {
    const { orgId, sandbox: key } = await newOrgKeys();
    const X = 1_234;
    const inv = (
      await ok(key, "POST", "/v1/invoices", { customer_name: "Race", line_items: [{ description: "ten", quantity: 10, unit_price_cents: X }] }, 201)
    )["invoice"] as Body;
    const id = String(inv["id"]);
    await ok(key, "POST", `/v1/invoices/${id}/send`, {});
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api("POST", `/v1/invoices/${id}/record-payment`, key, { amount: X, reference_id: `race-${i}-${id}` })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(10);
    const refused = results.filter((r) => r.status !== 201);
    expect(refused.map((r) => r.body["error_code"]).every((c) => c === "payment_exceeds_amount_due" || c === "invoice_paid")).toBe(true);
    expect((await ok(key, "GET", `/v1/invoices/${id}`))["invoice"] as Body).toMatchObject({ status: "paid", amount_paid_cents: 10 * X });
    expect(await trialBalance(key, id)).toEqual({ receivable: 0, income: 10 * X });
    expect(await transactionCount(orgId)).toBe(11);
  });

  it("receive-payment as the SDK calls it finds the invoice by its receivable's transaction", async () => {
    const { sandbox: key } = await newOrgKeys();
    const inv = (await ok(key, "POST", "/v1/invoices", { customer_name: "SDK", line_items: [{ description: "s", unit_price_cents: 9_000 }] }, 201))[
      "invoice"
    ] as Body;
    const sent = (await ok(key, "POST", `/v1/invoices/${String(inv["id"])}/send`, {}))["invoice"] as Body;
    const body = {
      amount: 4_000,
      invoice_transaction_id: sent["transaction_id"],
      customer_name: "SDK",
      reference_id: "sdk-pay-1",
      payment_method: "ach",
      payment_date: "2026-01-05",
    };
    const paid = await ok(key, "POST", "/v1/receive-payment", body, 201);
    expect(paid).toMatchObject({
      transaction_id: expect.stringMatching(/^txn_/),
      invoice: { status: "partially_paid", amount_due_cents: 5_000 },
      payment: { payment_method: "ach" },
    });
    expectError(await api("POST", "/v1/receive-payment", key, body), 409, "duplicate_reference_id");
    expectError(await api("POST", "/v1/receive-payment", key, { ...body, reference_id: "sdk-pay-1", amount: 1 }), 409, "idempotency_conflict");
    expectError(
      await api("POST", "/v1/receive-payment", key, { ...body, reference_id: "sdk-2", invoice_transaction_id: "txn_nope" }),
      404,
      "invoice_not_found",
    );
    expectError(await api("POST", "/v1/receive-payment", key, { amount: 1, reference_id: "sdk-3" }), 400, "validation_error");
  });
});

describe("isolation and scopes", () => {
  it("another org and the live environment never see a sandbox invoice; writes need the accounting scope", async () => {
    const a = await newOrgKeys();
    const b = await newOrgKeys();
    const inv = (await ok(a.sandbox, "POST", "/v1/invoices", { customer_name: "Iso", line_items: [{ description: "i", unit_price_cents: 700 }] }, 201))[
      "invoice"
    ] as Body;
    const id = String(inv["id"]);
    for (const key of [a.live, b.sandbox, b.live]) {
      expectError(await api("GET", `/v1/invoices/${id}`, key), 404, "invoice_not_found");
      expectError(await api("POST", `/v1/invoices/${id}/send`, key, {}), 404, "invoice_not_found");
      expect((await ok(key, "GET", "/v1/invoices"))["total"]).toBe(0);
    }
    const read = (await s.key({ orgId: a.orgId, scopes: ["read"] })).api_key;
    expectError(
      await api("POST", "/v1/invoices", read, { customer_name: "x", line_items: [{ description: "x", unit_price_cents: 1 }] }),
      403,
      "insufficient_scope",
    );
    expectError(await api("POST", `/v1/invoices/${id}/send`, read, {}), 403, "insufficient_scope");
    expect((await ok(read, "GET", `/v1/invoices/${id}`))["invoice"]).toMatchObject({ id });
  });
});
