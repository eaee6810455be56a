/**
 * What the service keeps: a payout, a participant's bank account and an ACH file, as the use cases read and write
 * them (store/ maps them to and from PostgreSQL rows; amounts are parsed into Cents there, once).
 */
import type { Cents } from "@treasury/contracts";
import type { FeesPaidBy, Rail } from "./money.ts";

export type PayoutStatus = "posting" | "refused" | "under_review" | "pending" | "processing" | "paid" | "failed";
export type PayoutAction = "settle" | "return" | "cancel";
export type ReturnFrom = "payouts_in_transit" | "platform_cash";

export interface PayoutRow {
  id: string;
  org_id: string;
  livemode: boolean;
  participant_id: string;
  requested_wallet_id: string | null;
  wallet_id: string | null;
  reference_id: string;
  request_hash: string;
  reference_type: string | null;
  description: string | null;
  payout_method: string | null;
  metadata: Record<string, unknown>;
  amount: Cents;
  fees: Cents;
  fees_paid_by: FeesPaidBy;
  net_amount: Cents;
  rail: Rail;
  status: PayoutStatus;
  ledger_reference: string;
  transaction_id: string | null;
  previous_balance: Cents | null;
  new_balance: Cents | null;
  refusal_code: string | null;
  dest_routing_number: string | null;
  dest_account_type: "checking" | "savings" | null;
  dest_last4: string | null;
  dest_sealed: string | null;
  ach_file_id: string | null;
  trace_number: string | null;
  bank_transfer_status: string | null;
  action: PayoutAction | null;
  action_at: Date | null;
  return_from: ReturnFrom | null;
  return_code: string | null;
  /** What the return costs the creator (the org's return fee when the return was marked, at most the net amount). */
  return_fee: Cents;
  failure_reason: string | null;
  settle_transaction_id: string | null;
  return_transaction_id: string | null;
  created_at: Date;
  updated_at: Date;
  processing_at: Date | null;
  paid_at: Date | null;
  failed_at: Date | null;
  /** The risk evaluation that sent it to review (null: risk allowed it, or was not asked). */
  risk_evaluation_id: string | null;
}

/** What a request records as its intent (`posting`), or its review (`under_review`, with the evaluation's id). */
export type NewPayout = Pick<
  PayoutRow,
  | "id"
  | "org_id"
  | "livemode"
  | "participant_id"
  | "requested_wallet_id"
  | "reference_id"
  | "request_hash"
  | "reference_type"
  | "description"
  | "payout_method"
  | "metadata"
  | "amount"
  | "fees"
  | "fees_paid_by"
  | "net_amount"
  | "rail"
  | "ledger_reference"
  | "dest_routing_number"
  | "dest_account_type"
  | "dest_last4"
  | "dest_sealed"
> & { status?: "posting" | "under_review"; risk_evaluation_id?: string | null };

export interface BankAccountRow {
  id: string;
  org_id: string;
  livemode: boolean;
  participant_id: string;
  routing_number: string;
  account_type: "checking" | "savings";
  last4: string;
  sealed: string;
  sealed_key_id: string;
  /** disabled: a return said the account cannot take money (see disabled_reason); a new PUT makes it active. */
  status: "active" | "disabled";
  disabled_reason: string | null;
  disabled_at: Date | null;
  disabled_by_payout_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export type BankAccountValues = Pick<BankAccountRow, "routing_number" | "account_type" | "last4" | "sealed" | "sealed_key_id">;

export interface AchFileRow {
  id: string;
  name: string;
  creation_date: string;
  file_id_modifier: string;
  effective_date: string;
  entry_count: number;
  total_credit_cents: string;
  entry_hash: string;
  sealed_content: string;
  sealed_key_id: string;
  created_at: Date;
  delivered_at: Date | null;
  location: string | null;
}

export type NewAchFile = Pick<
  AchFileRow,
  "name" | "creation_date" | "file_id_modifier" | "effective_date" | "entry_count" | "entry_hash" | "sealed_content" | "sealed_key_id"
> & { total_credit_cents: number };
