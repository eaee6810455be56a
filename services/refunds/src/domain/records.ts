/**
 * The refunds service's records as the use cases see them: a refund (`re_…`) and a buyer's refund request
 * (`rr_…`), with money in integer cents (the store parses int8 columns into safe integers).
 */
import type { schemas } from "@treasury/contracts";
import type { RefundRequestStatus } from "./refund-request.ts";
import type { RefundFrom, ShortfallPolicy } from "./refund.ts";

export type RefundStatus = "pending" | "completed" | "failed";

export type RefundRequestCancelledBy = schemas.RefundRequestCancelledBy;

/** Where a live card refund stands at the processor: none (not a card payment), pending, succeeded, failed. */
export type ProcessorStatus = "none" | "pending" | "succeeded" | "failed";

export interface RefundRow {
  id: string;
  org_id: string;
  livemode: boolean;
  request_key: string;
  request_hash: string;
  idempotency_key: string | null;
  external_refund_id: string | null;
  refund_request_id: string | null;
  sale_reference: string;
  amount_requested: number | null;
  refund_from: RefundFrom;
  shortfall: ShortfallPolicy;
  reason: string;
  metadata: Record<string, unknown>;
  status: RefundStatus;
  ledger_reference: string;
  transaction_id: string | null;
  sale_transaction_id: string | null;
  participant_id: string | null;
  refunded_amount: number;
  from_creator: number;
  from_platform: number;
  sales_tax: number;
  hold_amount_used: number;
  creator_receivable_amount: number;
  remaining_amount: number | null;
  sale_gross: number | null;
  is_full_refund: boolean;
  failure_code: string | null;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** A live refund at the card processor: null (not asked yet), none (not a card payment), pending, succeeded, failed. */
  processor_status: ProcessorStatus | null;
  processor_refund_id: string | null;
  processor_failure_reason: string | null;
  /** The ledger reversal of a refund the processor failed. */
  reversal_transaction_id: string | null;
}

/** A refund intent as recorded (step 1); the store adds the tenant, the org's shortfall policy and `pending`. */
export interface NewRefund {
  id: string;
  request_key: string;
  request_hash: string;
  idempotency_key: string | null;
  external_refund_id: string | null;
  refund_request_id: string | null;
  sale_reference: string;
  amount_requested: number | null;
  refund_from: RefundFrom;
  reason: string;
  metadata: Record<string, unknown>;
  ledger_reference: string;
  created_at: Date;
}

/** What the ledger did for a refund, as settling records it. */
export interface RefundOutcome {
  transaction_id: string;
  sale_transaction_id: string;
  participant_id: string | null;
  refunded_amount: number;
  from_creator: number;
  from_platform: number;
  sales_tax: number;
  hold_amount_used: number;
  creator_receivable_amount: number;
  remaining_amount: number;
  sale_gross: number;
  is_full_refund: boolean;
  completed_at: Date;
}

/** A card processor's word on a live refund, as recorded on it. */
export interface ProcessorState {
  status: ProcessorStatus;
  processor_refund_id: string | null;
  failure_reason: string | null;
}

export interface RefundRequestRow {
  id: string;
  org_id: string;
  livemode: boolean;
  sale_reference: string;
  customer_id: string | null;
  customer_email: string | null;
  amount: number | null;
  reason: string | null;
  refund_from: RefundFrom;
  status: RefundRequestStatus;
  refund_id: string | null;
  refund_transaction_id: string | null;
  rejection_reason: string | null;
  failure_reason: string | null;
  cancellation_reason: string | null;
  /** Who cancelled a cancelled request: a client (`api`) or the expiry schedule (`schedule`); null otherwise. */
  cancelled_by: RefundRequestCancelledBy | null;
  reviewed_by_actor: string | null;
  review_metadata: Record<string, unknown>;
  metadata: Record<string, unknown>;
  idempotency_key: string | null;
  request_hash: string;
  created_at: Date;
  updated_at: Date;
  reviewed_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
  /** When the request expires if still `created` then, on its own clock (fixed at creation). */
  expires_at: Date;
}

export type NewRefundRequest = Pick<
  RefundRequestRow,
  | "id"
  | "sale_reference"
  | "customer_id"
  | "customer_email"
  | "amount"
  | "reason"
  | "refund_from"
  | "metadata"
  | "idempotency_key"
  | "request_hash"
  | "created_at"
  | "expires_at"
>;

/** The fields a move of a refund request sets. */
export type RequestFields = Partial<
  Pick<
    RefundRequestRow,
    | "status"
    | "refund_id"
    | "refund_transaction_id"
    | "rejection_reason"
    | "failure_reason"
    | "cancellation_reason"
    | "cancelled_by"
    | "reviewed_by_actor"
    | "review_metadata"
    | "reviewed_at"
    | "completed_at"
    | "cancelled_at"
  >
>;
