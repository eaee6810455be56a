/**
 * The two other ways a payment reaches an invoice:
 * - `POST /v1/receive-payment` as the SDK sends it: the invoice named by the ledger transaction that posted its
 *   receivable (`invoice_transaction_id`), or by `invoice_id`. Errors: those of record-payment.
 * - a bank line whose text names an invoice's number (the ledger asks during auto-match): a payment of the line's
 *   amount with reference `bank_line:<line id>`, so a line pays once however often it is offered; a line already
 *   recorded answers its payment's transaction again. Refusals are answers (`matched: false`), not errors.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { Invoice, Payment } from "../domain/invoice.ts";
import { drivePosting } from "./drive.ts";
import type { InvoicingDeps } from "./ports.ts";
import { recordPayment } from "./record-payment.ts";
import { notFound } from "./transitions.ts";

export async function receivePayment(
  deps: InvoicingDeps,
  tenant: Tenant,
  body: z.output<typeof schemas.ReceivePaymentBody>,
): Promise<{ invoice: Invoice; payment: Payment }> {
  const invoice =
    body.invoice_id !== undefined
      ? await deps.invoices.get(tenant, body.invoice_id)
      : await deps.invoices.findBySendTransaction(tenant, body.invoice_transaction_id ?? "");
  if (invoice === undefined) throw notFound(body.invoice_id ?? `with transaction ${body.invoice_transaction_id ?? ""}`);
  return recordPayment(deps, tenant, invoice.id, {
    amount: body.amount,
    reference_id: body.reference_id,
    paid_at: body.payment_date,
    payment_method: body.payment_method,
    metadata: { ...(body.metadata ?? {}), ...(body.customer_id === undefined ? {} : { customer_id: body.customer_id }) },
    source: "api",
  });
}

export async function matchBankLine(deps: InvoicingDeps, req: schemas.MatchBankLineRequest): Promise<schemas.MatchBankLineAnswer> {
  const tenant: Tenant = { orgId: req.org_id, livemode: req.livemode };
  const reference = `bank_line:${req.bank_line_id}`;
  const existing = await deps.invoices.findPayment(tenant, reference);
  if (existing !== undefined) return answerOf(deps, tenant, existing);
  const invoice = await deps.invoices.findByNumber(tenant, req.invoice_number.toUpperCase());
  if (invoice === undefined) return { matched: false, reason: "invoice_not_found" };
  try {
    const { payment } = await recordPayment(deps, tenant, invoice.id, {
      amount: req.amount,
      reference_id: reference,
      paid_at: `${req.date}T00:00:00.000Z`,
      payment_method: "bank_transfer",
      metadata: { bank_line_id: req.bank_line_id },
      source: "bank_line",
    });
    return payment.transaction_id === null
      ? { matched: false, reason: "pending" }
      : { matched: true, transaction_id: payment.transaction_id, invoice_id: invoice.id };
  } catch (e) {
    if (e instanceof DomainError && e.code === "duplicate_reference_id") {
      const raced = await deps.invoices.findPayment(tenant, reference);
      if (raced !== undefined) return answerOf(deps, tenant, raced);
    }
    if (e instanceof DomainError && e.code !== "service_timeout" && e.code !== "service_unavailable") return { matched: false, reason: e.code };
    throw e;
  }
}

/** A line recorded before: its payment's transaction (driving the intent first if it is still pending). */
async function answerOf(deps: InvoicingDeps, tenant: Tenant, payment: Payment): Promise<schemas.MatchBankLineAnswer> {
  if (payment.transaction_id !== null) return { matched: true, transaction_id: payment.transaction_id, invoice_id: payment.invoice_id };
  const pending = await deps.postings.ofPayment(tenant, payment.id);
  if (pending === undefined) return { matched: false, reason: "pending" };
  return { matched: true, transaction_id: await drivePosting(deps, pending), invoice_id: payment.invoice_id };
}
