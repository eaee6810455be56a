/**
 * What payments records, as the use cases read and write it through their ports (usecases/ports.ts) and the
 * PostgreSQL store keeps it (store/): amounts are integer cents, already parsed.
 */
import type { FeePayer } from "@treasury/money-rules";

export type CheckoutStatus = "pending" | "completing" | "completed" | "failed";
export type CheckoutMode = "session" | "direct" | "direct_funded_wallet";

export interface CheckoutRow {
  id: string;
  org_id: string;
  livemode: boolean;
  mode: CheckoutMode;
  provider: "soledgic" | "stripe";
  payment_rail: "card" | "usdc";
  status: CheckoutStatus;
  participant_id: string;
  merchant_name: string;
  amount: number;
  currency: string;
  sales_tax: number;
  creator_bps: number;
  creator_amount: number;
  platform_amount: number;
  hold_funds: boolean;
  product_id: string | null;
  product_name: string | null;
  customer_email: string | null;
  customer_id: string | null;
  buyer_user_id: string | null;
  buyer_wallet_id: string | null;
  payment_method_id: string | null;
  success_url: string | null;
  cancel_url: string | null;
  metadata: Record<string, string>;
  idempotency_key: string | null;
  request_hash: string;
  create_response: Record<string, unknown> | null;
  checkout_url: string | null;
  payment_id: string | null;
  ledger_reference: string | null;
  sale_transaction_id: string | null;
  hold_id: string | null;
  completion_source: string | null;
  sandbox_idempotency_key: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** The card processor's fee of a live payment (0 otherwise), known when completion starts. */
  processing_fee: number;
  processing_fee_paid_by: FeePayer;
  processor_payment_intent: string | null;
  processor_charge: string | null;
  /** A live processor session's next check while pending (usecases/check-processor-sessions.ts); null otherwise. */
  processor_check_at: Date | null;
}

export type NewCheckout = Omit<
  CheckoutRow,
  | "updated_at"
  | "completed_at"
  | "sale_transaction_id"
  | "hold_id"
  | "failure_code"
  | "failure_reason"
  | "sandbox_idempotency_key"
  | "processing_fee"
  | "processor_payment_intent"
  | "processor_charge"
>;

/** A checkout session as it stands right after it is recorded: nothing of its completion or failure is known yet. */
export function recordedCheckout(c: NewCheckout, at: Date): CheckoutRow {
  return {
    ...c,
    updated_at: at,
    completed_at: null,
    sale_transaction_id: null,
    hold_id: null,
    failure_code: null,
    failure_reason: null,
    sandbox_idempotency_key: null,
    processing_fee: 0,
    processor_payment_intent: null,
    processor_charge: null,
  };
}

/** What the card processor reported about a live payment, recorded with the completion intent. */
export interface ProcessorPayment {
  sessionId: string;
  paymentIntent: string | null;
  charge: string | null;
  fee: number;
}

/** The completion intent a pending session records when it moves to `completing`. */
export interface CompletionIntent {
  ledger_reference: string;
  payment_id_by_mode: { wallet: string; other: string };
  completion_source: string;
  sandbox_idempotency_key: string | null;
  processor: ProcessorPayment | null;
}

export type DisputeStatus = "opening" | "open" | "closing" | "won" | "lost";

export interface DisputeRow {
  id: string;
  org_id: string;
  livemode: boolean;
  processor_dispute_id: string;
  checkout_session_id: string;
  sale_reference: string;
  participant_id: string;
  amount: number;
  currency: string;
  reason: string | null;
  status: DisputeStatus;
  hold_amount: number;
  hold_id: string | null;
  hold_transaction_id: string | null;
  outcome: "won" | "lost" | null;
  refund_amount: number | null;
  refund_transaction_id: string | null;
  fee: number;
  fee_transaction_id: string | null;
  release_transaction_id: string | null;
  created_at: Date;
  updated_at: Date;
  closed_at: Date | null;
}

export type NewDispute = Pick<
  DisputeRow,
  "id" | "org_id" | "livemode" | "processor_dispute_id" | "checkout_session_id" | "sale_reference" | "participant_id" | "amount" | "reason" | "hold_amount"
>;

/** What one step of a dispute records while the dispute is in that step. */
export type DisputeStepFields = Partial<
  Pick<
    DisputeRow,
    "hold_amount" | "hold_id" | "hold_transaction_id" | "refund_amount" | "refund_transaction_id" | "fee_transaction_id" | "release_transaction_id"
  >
>;

export type TopupStatus = "pending" | "completing" | "completed" | "failed";

export interface TopupRow {
  id: string;
  org_id: string;
  livemode: boolean;
  wallet_session_id: string;
  wallet_id: string;
  amount: number;
  currency: string;
  nonce: string;
  status: TopupStatus;
  processor_session_id: string | null;
  checkout_url: string | null;
  processing_fee: number;
  processor_payment_intent: string | null;
  ledger_reference: string | null;
  transaction_id: string | null;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  processor_check_at: Date | null;
}

export type NewTopup = Pick<TopupRow, "id" | "org_id" | "livemode" | "wallet_session_id" | "wallet_id" | "amount" | "nonce">;

export type WalletPermission = "view_balance" | "list_activity" | "top_up" | "request_refund";

export interface WalletSessionRow {
  id: string;
  org_id: string;
  livemode: boolean;
  wallet_id: string;
  wallet_type: "consumer_credit" | "creator_earnings";
  owner_id: string | null;
  owner_type: string | null;
  external_user_id: string | null;
  customer_email: string | null;
  permissions: WalletPermission[];
  status: "active" | "revoked";
  success_url: string | null;
  cancel_url: string | null;
  metadata: Record<string, unknown>;
  idempotency_key: string | null;
  request_hash: string;
  create_response: Record<string, unknown> | null;
  expires_at: Date;
  created_at: Date;
}

export type NewWalletSession = Omit<WalletSessionRow, "status" | "create_response" | "created_at">;

export interface SpendRow {
  org_id: string;
  livemode: boolean;
  reference_id: string;
  transaction_id: string;
  consumer_sub: string;
  consumer_wallet_id: string;
  creator_id: string;
  amount: number;
  sales_tax: number;
  creator_amount: number;
  platform_amount: number;
  creator_bps: number;
  status: "settled" | "reversing" | "reversed";
  created_at: Date;
}

export type NewSpend = Omit<SpendRow, "org_id" | "livemode" | "status" | "created_at"> & {
  product_id: string | null;
  product_name: string | null;
  metadata: Record<string, unknown>;
};

export interface ReversalRow {
  org_id: string;
  livemode: boolean;
  sale_transaction_id: string;
  spend_reference_id: string;
  reason: string | null;
  reversal_transaction_id: string | null;
  status: "reversing" | "reversed";
  response: Record<string, unknown> | null;
}

/** The reversal intent: who asked, why, and of which spend. */
export interface NewReversal {
  saleTransactionId: string;
  spendReferenceId: string;
  reason: string | null;
  metadata: Record<string, unknown>;
  requestId: string;
  keyId: string;
}

export type ProcessorEventStatus = "pending" | "processed" | "ignored";

export interface ProcessorEventRow {
  provider: "stripe";
  event_id: string;
  type: string;
  livemode: boolean;
  payload: Record<string, unknown>;
  status: ProcessorEventStatus;
  outcome: string | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  locked_until: Date | null;
  received_at: Date;
  processed_at: Date | null;
}

export interface NewProcessorEvent {
  provider: "stripe";
  eventId: string;
  type: string;
  livemode: boolean;
  payload: Record<string, unknown>;
  status: "pending" | "ignored";
}

export type ProcessorRefundRowStatus = "requested" | "pending" | "succeeded" | "failed";

export interface ProcessorRefundRow {
  org_id: string;
  livemode: boolean;
  refund_id: string;
  checkout_session_id: string;
  sale_reference: string;
  amount: number;
  processor_payment_intent: string;
  processor_refund_id: string | null;
  status: ProcessorRefundRowStatus;
  failure_reason: string | null;
  notified_status: string | null;
  created_at: Date;
  updated_at: Date;
}

export type NewProcessorRefund = Pick<
  ProcessorRefundRow,
  "org_id" | "livemode" | "refund_id" | "checkout_session_id" | "sale_reference" | "amount" | "processor_payment_intent"
>;

export interface ProcessorRefundState {
  processor_refund_id: string;
  status: "pending" | "succeeded" | "failed";
  failure_reason: string | null;
}

/** A live processor session whose check is due (usecases/check-processor-sessions.ts). */
export interface DueCheck {
  kind: "checkout" | "topup";
  /** The checkout session's or the top-up's id. */
  id: string;
  processor_session_id: string;
}
