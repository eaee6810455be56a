/**
 * A payment against a sent invoice: under the invoice's row lock the amount is checked against what is due and
 * added to what is paid, with the payment row and its ledger intent (cash / receivable, reference: the payment's
 * reference_id), so concurrent payments never pay past the total. Then the intent is driven (drive.ts).
 * The same reference_id again is 409 duplicate_reference_id with the payment (another body: idempotency_conflict).
 *
 * Errors: invoice_not_found, invoice_not_sent (a draft), invoice_paid, invoice_void, payment_exceeds_amount_due
 * (with amount_due_cents), duplicate_reference_id, idempotency_conflict, service_timeout, service_unavailable.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { requestHash } from "@treasury/service-kit";
import { dayOf, presentInvoice, presentPayment, type Invoice, type Payment } from "../domain/invoice.ts";
import { PAYMENT_KIND } from "./drive.ts";
import type { InvoicingDeps, Transition } from "./ports.ts";
import { refuseClosed, transitionAndDrive } from "./transitions.ts";

export interface PaymentInput {
  amount: number;
  reference_id: string;
  paid_at?: string | undefined;
  payment_method?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  source: "api" | "bank_line";
}

async function replay(deps: InvoicingDeps, tenant: Tenant, invoiceId: string, input: PaymentInput, hash: string): Promise<never> {
  const existing = await deps.invoices.findPayment(tenant, input.reference_id);
  if (existing === undefined) throw new Error(`payment ${input.reference_id} taken and not found`);
  if (existing.request_hash !== hash || existing.invoice_id !== invoiceId) {
    throw new DomainError("idempotency_conflict", `reference_id ${input.reference_id} was used for a different payment`, {
      hint: "Use a new reference_id for a different payment",
    });
  }
  const invoice = await deps.invoices.get(tenant, invoiceId);
  throw new DomainError("duplicate_reference_id", `A payment with reference_id ${input.reference_id} exists`, {
    hint: `GET /v1/invoices/${invoiceId} reads the invoice and its payments`,
    extra: {
      payment: presentPayment(existing),
      existing_transaction_id: existing.transaction_id,
      ...(invoice === undefined ? {} : { invoice: presentInvoice(invoice, dayOf(deps.now(tenant))) }),
    },
  });
}

function decide(deps: InvoicingDeps, tenant: Tenant, input: PaymentInput, hash: string, paidAt: Date) {
  return (inv: Invoice): Transition => {
    refuseClosed(inv);
    if (inv.status === "draft")
      throw new DomainError("invoice_not_sent", `Invoice ${inv.number} is a draft`, { hint: `POST /v1/invoices/${inv.id}/send sends it` });
    const due = inv.total_cents - inv.amount_paid_cents;
    if (input.amount > due) {
      throw new DomainError("payment_exceeds_amount_due", `Payment ${input.amount} exceeds the ${due} cents due on invoice ${inv.number}`, {
        extra: { amount_due_cents: due },
      });
    }
    const paid = inv.amount_paid_cents + input.amount;
    const full = paid === inv.total_cents;
    const paymentId = deps.newId("payment");
    return {
      status: full ? "paid" : "partially_paid",
      amount_paid_cents: paid,
      stamp: full ? "paid_at" : undefined,
      payment: {
        id: paymentId,
        invoice_id: inv.id,
        reference_id: input.reference_id,
        amount_cents: input.amount as Payment["amount_cents"],
        paid_at: paidAt,
        payment_method: input.payment_method ?? null,
        source: input.source,
        request_hash: hash,
        metadata: input.metadata ?? {},
      },
      posting: {
        id: deps.newId("posting"),
        org_id: tenant.orgId,
        livemode: tenant.livemode,
        invoice_id: inv.id,
        action: "payment",
        payment_id: paymentId,
        ledger_kind: PAYMENT_KIND,
        ledger_reference: input.reference_id,
        amount_cents: input.amount,
        effective_date: paidAt.toISOString(),
        event_types: full ? ["invoice.payment_recorded", "invoice.paid"] : ["invoice.payment_recorded"],
      },
    };
  };
}

/** Answers the invoice after the payment, and the payment with its ledger transaction. */
export async function recordPayment(
  deps: InvoicingDeps,
  tenant: Tenant,
  invoiceId: string,
  input: PaymentInput,
): Promise<{ invoice: Invoice; payment: Payment }> {
  const { source: _source, ...hashed } = input;
  const hash = requestHash(hashed);
  if ((await deps.invoices.findPayment(tenant, input.reference_id)) !== undefined) return replay(deps, tenant, invoiceId, input, hash);
  const paidAt = input.paid_at === undefined ? deps.now(tenant) : new Date(input.paid_at);
  let invoice: Invoice;
  try {
    invoice = await transitionAndDrive(deps, tenant, invoiceId, decide(deps, tenant, input, hash, paidAt));
  } catch (e) {
    // A concurrent payment with the same reference_id committed first (the store's unique key said so).
    if (e instanceof DomainError && e.code === "duplicate_reference_id" && e.extra === undefined) return replay(deps, tenant, invoiceId, input, hash);
    throw e;
  }
  const payment = await deps.invoices.findPayment(tenant, input.reference_id);
  if (payment === undefined) throw new Error(`payment ${input.reference_id} vanished`);
  return { invoice, payment };
}
