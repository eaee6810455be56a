/**
 * Transactions and accounting: the transaction list, the records (sale, income, expense, bill, adjustment,
 * opening balance, transfer), reversals and reports (docs/api.md, Transactions and accounting).
 */
import { z } from "zod";
import { ParticipantId, ReferenceId } from "../ids.ts";
import { NonNegativeCents, Percent, PositiveCents, SignedCents } from "../money.ts";
import { bool, boolQuery, isoDate, Metadata, pagingInt, str } from "./common.ts";

export const GetTransactionsQuery = z.object({
  creator_id: str(100).optional(),
  type: str(64).optional(),
  status: z.enum(["posted", "reversed"]).optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  page: pagingInt(1, 1_000_000).optional(),
  per_page: pagingInt(1, 100).optional(),
  include_entries: boolQuery.optional(),
});
export const RecordSaleBody = z.object({
  reference_id: ReferenceId,
  creator_id: ParticipantId,
  amount: PositiveCents,
  processing_fee: NonNegativeCents.optional(),
  processing_fee_paid_by: z.enum(["platform", "creator", "split"]).optional(),
  creator_percent: Percent.optional(),
  sales_tax: NonNegativeCents.optional(),
  product_id: str(255).optional(),
  product_name: str(255).optional(),
  description: str(1000).optional(),
  hold_funds: bool.optional(),
  metadata: Metadata.optional(),
});
const recordBase = {
  reference_id: ReferenceId,
  amount: PositiveCents,
  description: str(1000).optional(),
  category: str(100).optional(),
  date: isoDate.optional(),
  metadata: Metadata.optional(),
};
export const RecordIncomeBody = z.object({ ...recordBase, customer_name: str(255).optional() });
export const RecordExpenseBody = z.object({ ...recordBase, vendor_name: str(255).optional(), paid_from: str(64).optional() });
export const RecordBillBody = z.object({ ...recordBase, vendor_name: str(255).min(1), due_date: isoDate.optional() });
export const PayBillBody = z.object({
  reference_id: ReferenceId,
  bill_id: str(100).optional(),
  bill_transaction_id: str(100).optional(),
  amount: PositiveCents.optional(),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
export const RecordAdjustmentBody = z.object({
  reference_id: ReferenceId,
  adjustment_type: z.enum(["correction", "reclassification", "accrual", "deferral", "depreciation", "write_off", "year_end", "opening_balance", "other"]),
  entries: z
    .array(z.object({ account_type: str(64).min(1), entity_id: str(100).optional(), entry_type: z.enum(["debit", "credit"]), amount: PositiveCents }))
    .min(2)
    .max(50),
  reason: str(1000).min(1),
  adjustment_date: isoDate.optional(),
  prepared_by: str(255).optional(),
  metadata: Metadata.optional(),
});
export const RecordOpeningBalanceBody = z.object({
  reference_id: ReferenceId.optional(),
  as_of_date: isoDate,
  balances: z
    .array(z.object({ account_type: str(64).min(1), entity_id: str(100).optional(), balance: SignedCents }))
    .min(1)
    .max(50),
  metadata: Metadata.optional(),
});
export const RecordTransferBody = z.object({
  reference_id: ReferenceId.optional(),
  from_account_type: str(64).min(1),
  to_account_type: str(64).min(1),
  amount: PositiveCents,
  transfer_type: z.enum(["tax_reserve", "payout_reserve", "owner_draw", "owner_contribution", "operating", "savings", "investment", "other"]),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
export const ReverseTransactionBody = z.object({
  transaction_id: str(100).min(1),
  reason: str(1000).min(1),
  partial_amount: PositiveCents.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const REPORT_TYPES = ["trial_balance", "balance_sheet", "profit_loss", "transaction_history"] as const;
/** transaction_history pages its transactions with their entries (page/per_page, defaults 1/50, at most 100 a page). */
export const GenerateReportBody = z.object({
  report_type: z.enum(REPORT_TYPES),
  as_of: isoDate.optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  page: z.number({ error: "must be a number" }).int().min(1).max(1_000_000).optional(),
  per_page: z.number({ error: "must be a number" }).int().min(1).max(100).optional(),
});
/**
 * The report reads (GET /v1/trial-balance, /v1/balance-sheet, /v1/profit-loss): the same figures as
 * generate-report of that type. `as_of_date` (or `as_of`) is the cut-off of the trial balance and balance
 * sheet; profit and loss covers start_date..end_date. A bare date includes that whole day (UTC).
 */
export const ReportQuery = z.object({
  as_of_date: isoDate.optional(),
  as_of: isoDate.optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
});
