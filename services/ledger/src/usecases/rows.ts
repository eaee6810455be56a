/**
 * The rows the store ports answer and take (ports.ts): plain data, as the PostgreSQL adapters in store/ read and
 * write them and as the use cases present them. Amounts are Cents.
 */
import type { Cents } from "@treasury/contracts";
import type { Side, SystemAccountType, WalletFlags, WalletType } from "../domain/accounts.ts";

export interface WalletRow {
  id: string;
  org_id: string;
  livemode: boolean;
  account_type: WalletType;
  normal_side: Side;
  balance: Cents;
  held_amount: Cents;
  owner_id: string;
  owner_type: string | null;
  participant_id: string | null;
  name: string;
  status: "active" | "frozen" | "closed";
  redeemable: boolean;
  transferable: boolean;
  topup_supported: boolean;
  payout_supported: boolean;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export interface NewWallet {
  id?: string;
  type: WalletType;
  ownerId: string;
  ownerType: string;
  participantId: string | null;
  name: string;
  flags: WalletFlags;
  metadata: Record<string, unknown>;
}

export interface WalletFilter {
  ownerId?: string | undefined;
  ownerType?: string | undefined;
  walletType?: WalletType | undefined;
}

export interface SystemAccount {
  id: string;
  type: SystemAccountType;
  normal: Side;
}

export interface ParticipantRow {
  participant_id: string;
  account_id: string;
  wallet_id: string;
  user_id: string | null;
  display_name: string | null;
  email: string | null;
  default_split_bps: number | null;
  tax_info: Record<string, unknown> | null;
  payout_preferences: Record<string, unknown> | null;
  metadata: Record<string, unknown>;
  request_hash: string;
  created_at: Date;
}

/** A participant with its wallet's balance snapshot. */
export interface ParticipantWithBalance extends ParticipantRow {
  balance: Cents;
  held_amount: Cents;
  /** Owed to the platform (its creator_receivable): the next earnings repay it first. */
  owed: Cents;
}

export interface NewParticipant {
  participantId: string;
  walletId: string;
  userId: string | null;
  displayName: string | null;
  email: string | null;
  defaultSplitBps: number | null;
  taxInfo: Record<string, unknown> | null;
  payoutPreferences: Record<string, unknown> | null;
  metadata: Record<string, unknown>;
  requestHash: string;
}

export interface HoldRow {
  id: string;
  org_id: string;
  livemode: boolean;
  wallet_id: string;
  participant_id: string | null;
  amount: Cents;
  reference_id: string;
  hold_reason_code: string;
  hold_reason_description: string | null;
  hold_until: Date | null;
  release_transfer_to_participant_id: string | null;
  status: "held" | "released";
  transaction_id: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  release_id: string | null;
  released_at: Date | null;
  release_transaction_id: string | null;
  release_transfer_executed: boolean | null;
  /** Released by the ledger at hold_until (the auto-release job). */
  auto_release: boolean;
}

/** A participant's reserve as stored (usecases/reserves.ts). */
export interface ReserveRow {
  participant_id: string;
  reserve_type: "rolling" | "fixed" | "none";
  percent_bps: number | null;
  days: number | null;
  amount_cents: Cents | null;
  updated_at: Date;
}

export interface NewReserve {
  participantId: string;
  type: ReserveRow["reserve_type"];
  percentBps: number | null;
  days: number | null;
  amountCents: number | null;
}

export interface HoldFilter {
  participantId?: string | undefined;
  walletId?: string | undefined;
  ventureId?: string | undefined;
  readyOnly?: boolean | undefined;
  status?: "held" | "released" | undefined;
  /** What readyOnly compares hold_until with: the tenant's clock (real time when absent). */
  now?: Date | undefined;
}

export interface HoldsSummaryRow {
  total_held: Cents;
  total_ready: Cents;
  count: number;
  by_reason: Record<string, Cents>;
}

export interface SaleRow {
  sale_reference: string;
  transaction_id: string;
  participant_id: string | null;
  gross: Cents;
  creator_amount: Cents;
  sales_tax: Cents;
  refunded_amount: Cents;
  creator_refunded: Cents;
  platform_refunded: Cents;
  reversed: boolean;
  hold_id: string | null;
}

export interface TransactionRow {
  id: string;
  kind: string;
  reference_id: string;
  status: "posted" | "reversed";
  amount: Cents;
  reversed_amount: Cents;
  reversal_of: string | null;
  description: string | null;
  metadata: Record<string, unknown>;
  result: Record<string, unknown>;
  created_at: Date;
}

export interface EntryRow {
  seq: number;
  id: string;
  transaction_id: string;
  account_id: string;
  entry_type: Side;
  amount: Cents;
}

export interface WalletEntryRow {
  entry_id: string;
  entry_type: Side;
  amount: Cents;
  transaction_id: string;
  reference_id: string;
  transaction_type: string;
  description: string | null;
  balance_after: Cents | null;
  created_at: string | null;
}

export interface BillRow {
  id: string;
  transaction_id: string;
  vendor_name: string;
  amount: Cents;
  paid_amount: Cents;
  due_date: Date | null;
}

export interface RecordRow {
  id: string;
  kind: string;
  reference_id: string;
  amount: number;
  description: string | null;
  metadata: Record<string, unknown>;
  reversal_of: string | null;
  effective_at: Date | null;
  created_at: Date;
}

export interface RecordEntryRow {
  id: string;
  account_id: string;
  account_type: string;
  entity_id: string | null;
  entry_type: Side;
  amount: number;
}

export interface RecordSaleRow {
  sale_reference: string;
  participant_id: string | null;
  participant_display_name: string | null;
  gross: number;
  sales_tax: number;
}

export interface TransactionFilter {
  kind?: string | undefined;
  status?: "posted" | "reversed" | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  /** Only transactions with an entry on this wallet (a creator's). */
  walletId?: string | undefined;
}

export type ListedRow = Omit<TransactionRow, "result">;

export interface ListedEntry {
  id: string;
  account_id: string;
  entry_type: Side;
  amount: Cents;
  balance_after: Cents | null;
  account: { account_type: string; entity_id: string | null; name: string };
}

export interface AccountTotals {
  account_id: string;
  account_type: string;
  entity_id: string;
  name: string;
  normal_side: Side;
  is_wallet: boolean;
  debits: number;
  credits: number;
}

export type HistoryRow = ListedRow & { effective_at: Date | null; accounted_at: Date };

export interface TemplateRow {
  id: string;
  name: string;
  format: string;
  mapping: Record<string, unknown>;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewImport {
  id: string;
  format: string;
  accountName: string | null;
  templateId: string | null;
  statements: number;
  lines: number;
  errors: number;
}

export interface NewBankLine {
  id: string;
  bankAccount: string;
  currency: string;
  bookingDate: string;
  valueDate: string | null;
  amount: number;
  amountDecimal: string;
  description: string;
  reference: string;
  bankReference: string | null;
  counterparty: Record<string, unknown> | null;
  bankCode: string | null;
  lineNo: number;
  dedupeRef: string;
}

export interface BankLineRow {
  id: string;
  import_id: string;
  bank_account: string;
  currency: string;
  booking_date: string;
  value_date: string | null;
  amount: number;
  amount_decimal: string;
  description: string;
  reference: string;
  bank_reference: string | null;
  counterparty: Record<string, unknown> | null;
  bank_code: string | null;
  line_no: number;
  created_at: Date;
}

export interface BankLineFilter {
  bankAccount?: string | undefined;
  /** Booking dates, inclusive, `YYYY-MM-DD`. */
  from?: string | undefined;
  to?: string | undefined;
}

export interface MatchRow {
  id: string;
  bank_line_id: string;
  transaction_id: string;
  method: "auto" | "manual";
  confidence: number | null;
  days_apart: number | null;
  reference_match: boolean | null;
  note: string | null;
  created_at: Date;
  unmatched_at: Date | null;
}

export interface NewMatch {
  id: string;
  bankLineId: string;
  transactionId: string;
  method: "auto" | "manual";
  confidence: number | null;
  daysApart: number | null;
  referenceMatch: boolean | null;
  note: string | null;
}

export interface BankSideTransaction {
  id: string;
  /** Accounting day (UTC), `YYYY-MM-DD`. */
  date: string;
  accounted_at: Date;
  kind: string;
  reference_id: string;
  description: string | null;
  /** Net movement on the bank-side accounts: positive in, negative out. */
  amount: number;
}

export interface TransactionRange {
  from?: Date | undefined;
  to?: Date | undefined;
}

/** What auto-match needs of a bank-side transaction, in the shape autoMatch reads (one object per row). */
export interface MatchCandidate {
  id: string;
  date: string;
  amount: number;
  currency: string;
  reference: string;
  description: string;
}

export interface NewBill {
  id: string;
  transactionId: string;
  vendorName: string;
  amount: number;
  dueDate: Date | null;
}

/** What auto-match needs of an unmatched bank line, in the shape autoMatch reads (one object per row). */
export interface BankLineForMatching {
  id: string;
  date: string;
  amount: number;
  currency: string;
  reference: string;
  description: string;
}
