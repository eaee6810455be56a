/**
 * Overdue invoices: an open invoice (sent, or partly paid) whose due date is before today on its org's clock shows
 * `overdue` at once (domain/invoice.ts shownStatus); this pass writes `invoice.overdue` for each, once. A leader
 * job runs it (jobs/index.ts), every few seconds and as soon as a sandbox clock moves.
 */
import { dayOf, presentInvoice } from "../domain/invoice.ts";
import type { InvoicingDeps } from "./ports.ts";

export async function markOverdue(deps: Pick<InvoicingDeps, "invoices" | "now">, batchMax: number): Promise<number> {
  return deps.invoices.markOverdue(
    (tenant) => dayOf(deps.now(tenant)),
    batchMax,
    (invoice, today) => [{ type: "invoice.overdue", data: { invoice: presentInvoice(invoice, today) } }],
  );
}
