/** The transaction_history report: a period's transactions in accounting-time order, with their entries, paged. */
import type { Tenant } from "@treasury/contracts";
import type { LedgerDeps } from "./deps.ts";
import { CURRENCY } from "./present.ts";

export const HISTORY_PAGE_DEFAULT = 50;

/** Errors: none beyond decoding (validation_error). */
export async function transactionHistory(
  deps: Pick<LedgerDeps, "listing">,
  tenant: Tenant,
  range: { from: Date | undefined; to: Date },
  paging: { page: number; perPage: number | undefined },
) {
  const perPage = paging.perPage ?? HISTORY_PAGE_DEFAULT;
  const { rows, total } = await deps.listing.byAccountingTime(tenant, range, perPage, (paging.page - 1) * perPage);
  const entries = await deps.listing.entriesWithAccounts(
    tenant,
    rows.map((r) => r.id),
  );
  return {
    type: "transaction_history",
    start_date: range.from?.toISOString() ?? null,
    end_date: range.to.toISOString(),
    transactions: rows.map((t) => ({
      id: t.id,
      transaction_type: t.kind,
      reference_id: t.reference_id,
      description: t.description,
      amount: t.amount,
      currency: CURRENCY,
      status: t.status,
      reversed_amount: t.reversed_amount,
      reversal_of: t.reversal_of,
      metadata: t.metadata,
      accounted_at: t.accounted_at.toISOString(),
      effective_at: t.effective_at?.toISOString() ?? null,
      created_at: t.created_at.toISOString(),
      entries: entries.get(t.id) ?? [],
    })),
    pagination: { total, page: paging.page, per_page: perPage, total_pages: Math.ceil(total / perPage) },
  };
}
