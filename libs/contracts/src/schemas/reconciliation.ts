/** Reconciliation of imported bank lines with ledger transactions (docs/api.md, Transactions and accounting). */
import { z } from "zod";
import { isoDate, pagingInt, str } from "./common.ts";

/**
 * Auto-match: unmatched bank lines booked in start_date..end_date (all when absent) against unmatched ledger
 * transactions that moved platform cash within date_window_days (default 3) of them.
 */
export const AutoMatchBody = z.object({
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  bank_account: str(100).optional(),
  date_window_days: z.number({ error: "must be a number" }).int().min(0).max(31).optional(),
  min_confidence: z.number({ error: "must be a number" }).min(0.5).max(1).optional(),
});
export const ManualMatchBody = z.object({
  bank_line_id: str(100).min(1),
  transaction_id: str(100).min(1),
  note: str(1000).optional(),
});
export const UnmatchedQuery = z.object({
  bank_account: str(100).optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
