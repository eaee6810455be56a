/**
 * AR and AP aging as of the end of a day (default: today on the org's clock), from the ledger's entries as they
 * stood then: the receivable of each invoice (its accounts_receivable balance) and each bill still owing (record-bill
 * less pay-bill, each net of its reversals), each in the bucket of its days past due at that date, in rows per customer or vendor.
 * Errors: validation_error, service_unavailable (the ledger did not answer: retry).
 */
import type { Tenant } from "@treasury/contracts";
import { age, type OpenItem } from "../domain/aging.ts";
import { dayOf } from "../domain/invoice.ts";
import type { InvoicingDeps } from "./ports.ts";

/** The last millisecond of a day: entries dated that day count. */
function endOf(day: string): Date {
  return new Date(`${day}T23:59:59.999Z`);
}

export async function arAging(deps: Pick<InvoicingDeps, "ledger" | "invoices" | "now">, tenant: Tenant, asOfDate: string | undefined) {
  const day = asOfDate ?? dayOf(deps.now(tenant));
  const balances = await deps.ledger.receivableBalances(tenant, endOf(day));
  const invoices = new Map(
    (
      await deps.invoices.many(
        tenant,
        balances.map((b) => b.invoice_id),
      )
    ).map((i) => [i.id, i]),
  );
  const items: OpenItem[] = balances.map((b) => {
    const inv = invoices.get(b.invoice_id);
    // Every receivable is an invoice's; one without its row (never expected) is still counted, as due that day.
    return {
      party_id: inv?.customer_id ?? null,
      party: inv?.customer_name ?? `invoice ${b.invoice_id}`,
      due_date: inv?.due_date ?? day,
      amount_cents: b.balance_cents,
    };
  });
  const aged = age(items, day);
  return { ...aged, rows: aged.rows.map((r) => ({ customer_id: r.id, customer_name: r.name, ...r.buckets, total_cents: r.total_cents })) };
}

export async function apAging(deps: Pick<InvoicingDeps, "ledger" | "now">, tenant: Tenant, asOfDate: string | undefined) {
  const day = asOfDate ?? dayOf(deps.now(tenant));
  const bills = await deps.ledger.openBills(tenant, endOf(day));
  const items: OpenItem[] = bills.map((b) => ({
    party_id: null,
    party: b.vendor_name,
    // A bill without a due date is due on its own date.
    due_date: (b.due_date ?? b.accounted_at).slice(0, 10),
    amount_cents: b.amount_cents - b.paid_cents,
  }));
  const aged = age(items, day);
  return { ...aged, rows: aged.rows.map((r) => ({ vendor_name: r.name, ...r.buckets, total_cents: r.total_cents })) };
}
