/** get-transactions: the ledger's transactions, newest first, filtered and paged (docs/api.md, Transactions and accounting). */
import type { schemas, Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import { CURRENCY } from "./present.ts";

type Query = z.output<typeof schemas.GetTransactionsQuery>;

export const TRANSACTIONS_PAGE_DEFAULT = 50;

/** Errors: validation_error, invalid_limit (from decoding). */
export async function getTransactions(deps: Pick<LedgerDeps, "wallets" | "listing">, tenant: Tenant, q: Query) {
  const page = q.page ?? 1;
  const perPage = q.per_page ?? TRANSACTIONS_PAGE_DEFAULT;
  let creatorWalletId: string | null | undefined;
  if (q.creator_id !== undefined) creatorWalletId = (await deps.wallets.findCreator(tenant, q.creator_id))?.id ?? null;
  const empty = creatorWalletId === null;
  const { rows, total } = empty
    ? { rows: [], total: 0 }
    : await deps.listing.transactions(
        tenant,
        {
          kind: q.type,
          status: q.status,
          from: q.start_date === undefined ? undefined : new Date(q.start_date),
          to: q.end_date === undefined ? undefined : endOf(q.end_date),
          walletId: creatorWalletId ?? undefined,
        },
        perPage,
        (page - 1) * perPage,
      );
  const entries =
    q.include_entries === true
      ? await deps.listing.entriesWithAccounts(
          tenant,
          rows.map((r) => r.id),
        )
      : undefined;
  return {
    transactions: rows.map((t) => ({
      id: t.id,
      transaction_type: t.kind,
      reference_id: t.reference_id,
      reference_type: t.kind,
      description: t.description,
      amount: t.amount,
      currency: CURRENCY,
      status: t.status,
      reversed_amount: t.reversed_amount,
      reversal_of: t.reversal_of,
      metadata: t.metadata,
      created_at: t.created_at.toISOString(),
      ...(entries !== undefined ? { entries: entries.get(t.id) ?? [] } : {}),
    })),
    pagination: { total, page, per_page: perPage, total_pages: Math.ceil(total / perPage) },
  };
}

/** A bare date (YYYY-MM-DD) as end_date includes that whole day. */
function endOf(s: string): Date {
  const d = new Date(s);
  return /^\d{4}-\d{2}-\d{2}$/.test(s) ? new Date(d.getTime() + 86_400_000 - 1) : d;
}
