/**
 * Steps 2 and 3 of every money movement of an invoice (docs/architecture.md, "Money across services"): the intent
 * (a ledger_postings row) was recorded with the invoice's change; here the ledger is asked to post it under its
 * deterministic reference, then it is settled with its events. The request, a retry and the reconciler all drive
 * the same stored intent, so the ledger's idempotency makes it one movement.
 *
 *   send     `invoice` / `invoice:<id>:send`:   accounts_receivable (the invoice) ← income, as of the issue date
 *   payment  `invoice_payment` / <reference_id>: platform_cash ← accounts_receivable (the invoice), as of paid_at
 *   void     `invoice` / `invoice:<id>:void`:   income ← accounts_receivable, reversing the send
 */
import type { PostRequestInput, Posting as LedgerPosting } from "@treasury/contracts";
import { postAndSettle } from "@treasury/service-kit";
import { presentInvoice, presentPayment, dayOf, type Invoice, type Payment } from "../domain/invoice.ts";
import type { InvoicingDeps, PendingEvent, Posting } from "./ports.ts";

export const SEND_KIND = "invoice";
export const PAYMENT_KIND = "invoice_payment";

const receivable = (invoiceId: string) => ({ system: "accounts_receivable" as const, entity_id: invoiceId });

function postings(p: Posting): LedgerPosting[] {
  const amount = p.amount_cents;
  if (p.action === "send") return [{ debit: receivable(p.invoice_id), credit: { system: "income" }, amount }];
  if (p.action === "payment") return [{ debit: { system: "platform_cash" }, credit: receivable(p.invoice_id), amount }];
  return [{ debit: { system: "income" }, credit: receivable(p.invoice_id), amount }];
}

/** The ledger request of an intent: built only from the stored row, so every driver sends the same one. */
export function ledgerRequest(p: Posting): PostRequestInput {
  return {
    org_id: p.org_id,
    livemode: p.livemode,
    kind: p.ledger_kind,
    reference_id: p.ledger_reference,
    description: `Invoice ${p.invoice_id}: ${p.action}`,
    metadata: { invoice_id: p.invoice_id, action: p.action, ...(p.payment_id === null ? {} : { payment_id: p.payment_id }) },
    postings: postings(p),
    effective_date: p.effective_date,
    result_extra: { invoice_id: p.invoice_id },
  };
}

/** The events of a settled intent, from the invoice (and payment) as they stand when it settles. */
function eventsOf(deps: Pick<InvoicingDeps, "now">, p: Posting) {
  return (invoice: Invoice, payment: Payment | undefined): PendingEvent[] => {
    const shown = presentInvoice(invoice, dayOf(deps.now({ orgId: invoice.org_id, livemode: invoice.livemode })));
    return p.event_types.map((type) => ({
      type,
      data: type === "invoice.payment_recorded" && payment !== undefined ? { invoice: shown, payment: presentPayment(payment) } : { invoice: shown },
    }));
  };
}

/**
 * Drives one intent. Every posting is between system accounts, so the ledger has no business reason to refuse
 * it: a refusal marks the intent failed (visible to operators, never retried) and answers the ledger's error. No
 * answer leaves it pending for the reconciler and answers service_timeout. Answers the ledger transaction id.
 */
export async function drivePosting(deps: Pick<InvoicingDeps, "ledger" | "postings" | "now">, p: Posting): Promise<string> {
  return postAndSettle({
    post: () => deps.ledger.post(ledgerRequest(p)),
    settle: async (posted) => {
      await deps.postings.settle(p, posted.transaction_id, eventsOf(deps, p));
      return posted.transaction_id;
    },
    refused: async (e) => {
      await deps.postings.fail(p, e.code);
      throw e;
    },
    pendingMessage: "The ledger did not answer in time; the invoice's posting completes shortly, read the invoice again",
  });
}

/** The reconciler's pass: intents older than `graceMs` still pending are driven again. Answers how many settled. */
export async function reconcilePostings(
  deps: Pick<InvoicingDeps, "ledger" | "postings" | "now">,
  opts: { graceMs: number; batchMax: number; signal?: AbortSignal },
): Promise<number> {
  let settled = 0;
  for (const p of await deps.postings.stale(opts.graceMs, opts.batchMax)) {
    if (opts.signal?.aborted === true) break;
    try {
      await drivePosting(deps, p);
      settled++;
    } catch {
      // Left pending (no answer) or failed (a refusal, now recorded): the next pass or an operator takes it.
    }
  }
  return settled;
}
