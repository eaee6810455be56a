/** Reading invoices: one with its payments, or a page of them. Errors: invoice_not_found, invalid_limit. */
import type { schemas, Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { dayOf, type Invoice, type Payment } from "../domain/invoice.ts";
import type { InvoicingDeps } from "./ports.ts";
import { notFound } from "./transitions.ts";

export const INVOICES_PAGE_DEFAULT = 25;

export async function getInvoice(
  deps: Pick<InvoicingDeps, "invoices" | "now">,
  tenant: Tenant,
  id: string,
): Promise<{ invoice: Invoice; payments: Payment[]; today: string }> {
  const invoice = await deps.invoices.get(tenant, id);
  if (invoice === undefined) throw notFound(id);
  return { invoice, payments: await deps.invoices.payments(tenant, id), today: dayOf(deps.now(tenant)) };
}

export async function listInvoices(deps: Pick<InvoicingDeps, "invoices" | "now">, tenant: Tenant, q: z.output<typeof schemas.ListInvoicesQuery>) {
  const limit = q.limit ?? INVOICES_PAGE_DEFAULT;
  const offset = q.offset ?? 0;
  const today = dayOf(deps.now(tenant));
  const page = await deps.invoices.list(tenant, { status: q.status, customer_id: q.customer_id, today, limit, offset });
  return { ...page, limit, offset, today };
}
