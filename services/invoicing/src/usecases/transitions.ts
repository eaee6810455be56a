/**
 * Send and void: each decides under the invoice's row lock (store transition) and records the ledger intent it
 * needs in the same transaction, then drives it (drive.ts).
 *
 * send  draft → sent, posting the receivable as of the issue date. Errors: invoice_not_found,
 *       invoice_already_sent, invoice_void, service_timeout (posted shortly), service_unavailable.
 * void  draft → void (nothing was posted); sent and unpaid → void, reversing the receivable. Errors:
 *       invoice_not_found, invoice_paid, invoice_has_payments (partly paid: refund the payments first),
 *       invoice_void, service_timeout, service_unavailable.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { dayOf, presentInvoice, type Invoice } from "../domain/invoice.ts";
import { drivePosting, SEND_KIND } from "./drive.ts";
import type { InvoicingDeps, Transition } from "./ports.ts";

export function notFound(id: string): DomainError {
  return new DomainError("invoice_not_found", `Invoice ${id} not found`, { hint: "GET /v1/invoices lists this environment's invoices" });
}

/** Runs a transition and drives the intent it recorded; answers the invoice as it stands after both. */
export async function transitionAndDrive(deps: InvoicingDeps, tenant: Tenant, id: string, decide: (locked: Invoice) => Transition): Promise<Invoice> {
  const done = await deps.invoices.transition(tenant, id, decide);
  if (done === undefined) throw notFound(id);
  if (done.posting === undefined) return done.invoice;
  await deps.afterIntent?.();
  await drivePosting(deps, done.posting);
  return (await deps.invoices.get(tenant, id)) ?? done.invoice;
}

export function refuseClosed(inv: Invoice): void {
  if (inv.status === "void") throw new DomainError("invoice_void", `Invoice ${inv.number} is void`);
  if (inv.status === "paid") throw new DomainError("invoice_paid", `Invoice ${inv.number} is paid`);
}

export async function sendInvoice(deps: InvoicingDeps, tenant: Tenant, id: string): Promise<Invoice> {
  return transitionAndDrive(deps, tenant, id, (inv) => {
    refuseClosed(inv);
    if (inv.status !== "draft")
      throw new DomainError("invoice_already_sent", `Invoice ${inv.number} was sent already`, { hint: `GET /v1/invoices/${inv.id} reads it` });
    return {
      status: "sent",
      amount_paid_cents: 0,
      stamp: "sent_at",
      posting: {
        id: deps.newId("posting"),
        org_id: tenant.orgId,
        livemode: tenant.livemode,
        invoice_id: inv.id,
        action: "send",
        payment_id: null,
        ledger_kind: SEND_KIND,
        ledger_reference: `invoice:${inv.id}:send`,
        amount_cents: inv.total_cents,
        effective_date: inv.issue_date,
        event_types: ["invoice.sent"],
      },
    };
  });
}

export async function voidInvoice(deps: InvoicingDeps, tenant: Tenant, id: string): Promise<Invoice> {
  const today = dayOf(deps.now(tenant));
  return transitionAndDrive(deps, tenant, id, (inv) => {
    refuseClosed(inv);
    if (inv.amount_paid_cents > 0) {
      throw new DomainError("invoice_has_payments", `Invoice ${inv.number} has ${inv.amount_paid_cents} cents of payments recorded`, {
        hint: "A partly paid invoice is not voided; record the rest, or refund what was paid outside it",
      });
    }
    if (inv.status === "draft") {
      return {
        status: "void",
        amount_paid_cents: 0,
        stamp: "voided_at",
        events: (after) => [{ type: "invoice.voided", data: { invoice: presentInvoice(after, today) } }],
      };
    }
    return {
      status: "void",
      amount_paid_cents: 0,
      stamp: "voided_at",
      posting: {
        id: deps.newId("posting"),
        org_id: tenant.orgId,
        livemode: tenant.livemode,
        invoice_id: inv.id,
        action: "void",
        payment_id: null,
        ledger_kind: SEND_KIND,
        ledger_reference: `invoice:${inv.id}:void`,
        amount_cents: inv.total_cents,
        // The reversal is dated when it happens, never before the receivable it reverses.
        effective_date: today < inv.issue_date ? inv.issue_date : today,
        event_types: ["invoice.voided"],
      },
    };
  });
}
