// The invoicing use cases on in-memory fakes: which ledger requests each step sends (accounts, amounts,
// references, accounting dates), the refusals of each state, payments kept within the total, and the events.
import { describe, expect, it } from "vitest";
import { createInvoice } from "../src/usecases/create-invoice.ts";
import { recordPayment } from "../src/usecases/record-payment.ts";
import { matchBankLine } from "../src/usecases/receive-payment.ts";
import { sendInvoice, voidInvoice } from "../src/usecases/transitions.ts";
import { fakes } from "./fakes.ts";

const tenant = { orgId: "org_1", livemode: false };
const body = { customer_name: "Ada", line_items: [{ description: "work", quantity: "2.5" as const, unit_price_cents: 1_000 }], issue_date: "2026-01-10" };

async function sent() {
  const f = fakes();
  const inv = await createInvoice(f.deps, tenant, body, "http://alt");
  await sendInvoice(f.deps, tenant, inv.id);
  return { f, id: inv.id };
}

describe("invoice use cases", () => {
  it("send posts receivable / income as of the issue date under invoice:<id>:send", async () => {
    const { f, id } = await sent();
    expect(f.posts).toEqual([
      expect.objectContaining({
        kind: "invoice",
        reference_id: `invoice:${id}:send`,
        effective_date: "2026-01-10",
        postings: [{ debit: { system: "accounts_receivable", entity_id: id }, credit: { system: "income" }, amount: 2_500 }],
      }),
    ]);
    expect(f.events.map((e) => e.type)).toEqual(["invoice.created", "invoice.sent"]);
    await expect(sendInvoice(f.deps, tenant, id)).rejects.toMatchObject({ code: "invoice_already_sent" });
  });

  it("payments post cash / receivable under their reference, stay within the total, and the last one pays it", async () => {
    const { f, id } = await sent();
    await recordPayment(f.deps, tenant, id, { amount: 1_000, reference_id: "p1", source: "api", paid_at: "2026-01-12T00:00:00Z" });
    await expect(recordPayment(f.deps, tenant, id, { amount: 1_501, reference_id: "p2", source: "api" })).rejects.toMatchObject({
      code: "payment_exceeds_amount_due",
      extra: { amount_due_cents: 1_500 },
    });
    const last = await recordPayment(f.deps, tenant, id, { amount: 1_500, reference_id: "p3", source: "api" });
    expect(last.invoice).toMatchObject({ status: "paid", amount_paid_cents: 2_500 });
    expect(f.posts[1]).toMatchObject({
      kind: "invoice_payment",
      reference_id: "p1",
      effective_date: "2026-01-12T00:00:00.000Z",
      postings: [{ debit: { system: "platform_cash" }, credit: { system: "accounts_receivable", entity_id: id }, amount: 1_000 }],
    });
    expect(f.events.map((e) => e.type).slice(2)).toEqual(["invoice.payment_recorded", "invoice.payment_recorded", "invoice.paid"]);
    await expect(voidInvoice(f.deps, tenant, id)).rejects.toMatchObject({ code: "invoice_paid" });
    await expect(recordPayment(f.deps, tenant, id, { amount: 1_500, reference_id: "p3", source: "api" })).rejects.toMatchObject({
      code: "duplicate_reference_id",
    });
  });

  it("void reverses a sent invoice; a partly paid one is refused; a void one takes nothing", async () => {
    const { f, id } = await sent();
    const voided = await voidInvoice(f.deps, tenant, id);
    expect(voided.status).toBe("void");
    expect(f.posts[1]).toMatchObject({
      reference_id: `invoice:${id}:void`,
      postings: [{ debit: { system: "income" }, credit: { system: "accounts_receivable", entity_id: id }, amount: 2_500 }],
    });
    await expect(recordPayment(f.deps, tenant, id, { amount: 1, reference_id: "late", source: "api" })).rejects.toMatchObject({ code: "invoice_void" });
    const other = await sent();
    await recordPayment(other.f.deps, tenant, other.id, { amount: 1, reference_id: "part", source: "api" });
    await expect(voidInvoice(other.f.deps, tenant, other.id)).rejects.toMatchObject({ code: "invoice_has_payments" });
  });

  it("a bank line naming the invoice pays it once; a second offer answers the same transaction", async () => {
    const { f, id } = await sent();
    const req = { org_id: "org_1", livemode: false, bank_line_id: "bl_1", invoice_number: "INV-000001", amount: 2_500, date: "2026-01-14" };
    const first = await matchBankLine(f.deps, req);
    expect(first).toMatchObject({ matched: true, invoice_id: id });
    expect(await matchBankLine(f.deps, req)).toEqual(first);
    expect(f.posts.filter((p) => p.kind === "invoice_payment")).toHaveLength(1);
    expect(await matchBankLine(f.deps, { ...req, bank_line_id: "bl_2" })).toEqual({ matched: false, reason: "invoice_paid" });
    expect(await matchBankLine(f.deps, { ...req, bank_line_id: "bl_3", invoice_number: "INV-000999" })).toEqual({
      matched: false,
      reason: "invoice_not_found",
    });
  });

  it("another tenant finds nothing", async () => {
    const { f, id } = await sent();
    await expect(sendInvoice(f.deps, { orgId: "org_2", livemode: false }, id)).rejects.toMatchObject({ code: "invoice_not_found" });
    await expect(recordPayment(f.deps, { orgId: "org_1", livemode: true }, id, { amount: 1, reference_id: "x", source: "api" })).rejects.toMatchObject({
      code: "invoice_not_found",
    });
  });
});
