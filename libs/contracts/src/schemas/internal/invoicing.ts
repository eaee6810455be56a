/**
 * What invoicing asks the ledger for aging (receivables per invoice and open bills, as of a time) and what the
 * ledger asks invoicing when a bank line names an invoice; not part of the public API.
 */
import { z } from "zod";
import { PositiveCents } from "../../money.ts";
import { str } from "../common.ts";
import { InternalScope } from "./scope.ts";

/** Receivables or bills read per request: a bound on one aging answer (a larger book is refused, never cut short). */
export const AGING_ROWS_MAX = 10_000;

const asOf = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be an ISO 8601 time" });
const SignedSum = z.number().int().refine(Number.isSafeInteger);

/**
 * `svc.ledger.internal.receivableBalances`: the balance of every per-invoice accounts_receivable account from the
 * entries of transactions whose accounting time is at or before `as_of`, non-zero ones only.
 * Answer: `{receivables: [{invoice_id, balance_cents}]}`.
 */
export const RECEIVABLE_BALANCES_OPERATION = "internal.receivableBalances";
export const ReceivableBalancesRequest = z.object({ ...InternalScope, as_of: asOf });
export const ReceivableBalance = z.object({ invoice_id: z.string(), balance_cents: SignedSum });
export type ReceivableBalance = z.infer<typeof ReceivableBalance>;

/**
 * `svc.ledger.internal.openBills`: bills recorded (record-bill) at or before `as_of` with what pay-bill had paid
 * of them by then, both net of the reversals posted by then (a reversed bill owes nothing, a reversed payment owes
 * again), those with something still due only. Answer: `{bills: [OpenBill]}`.
 */
export const OPEN_BILLS_OPERATION = "internal.openBills";
export const OpenBillsRequest = z.object({ ...InternalScope, as_of: asOf });
export const OpenBill = z.object({
  bill_id: z.string(),
  vendor_name: z.string(),
  /** The bill's due date (ISO time), or null: due on its accounting date. */
  due_date: z.string().nullable(),
  accounted_at: z.string(),
  amount_cents: SignedSum,
  paid_cents: SignedSum,
});
export type OpenBill = z.infer<typeof OpenBill>;

/**
 * `svc.invoicing.internal.matchBankLine`: a credit bank line whose text names an invoice number. Invoicing
 * records a payment of the line's amount against that invoice, idempotent on the bank line's id, and answers the
 * payment's ledger transaction (`{matched: true, transaction_id, invoice_id}`), or `{matched: false, reason}` when
 * no open invoice of that number can take the amount.
 */
export const MATCH_BANK_LINE_OPERATION = "internal.matchBankLine";
export const MatchBankLineRequest = z.object({
  ...InternalScope,
  bank_line_id: str(100).min(1),
  invoice_number: str(40).min(1),
  amount: PositiveCents,
  /** The booking day, YYYY-MM-DD: the payment's date. */
  date: str(40),
});
export type MatchBankLineRequest = z.infer<typeof MatchBankLineRequest>;
export type MatchBankLineAnswer = { matched: true; transaction_id: string; invoice_id: string } | { matched: false; reason: string };

/** How an invoice number appears in a bank line's text (docs/api.md, Invoicing: `INV-000042`). */
export const INVOICE_NUMBER_PATTERN = /\bINV-\d{6,}\b/i;
