/** The wire shapes of refunds, refund requests and their events (docs/api.md, Refunds and refund requests). */
import type { RefundRequestRow, RefundRow } from "./records.ts";

/** Refunds are in the platform's one currency. */
export const CURRENCY = "USD";

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/**
 * `refunded_amount_cents` is what the ledger refunded (0 until the refund completed); `refunded_amount` carries
 * the same integer cents under the name existing client libraries read.
 */
export function presentRefund(r: RefundRow): Record<string, unknown> {
  return {
    id: r.id,
    object: "refund",
    transaction_id: r.transaction_id,
    sale_reference: r.sale_reference,
    original_sale_reference: r.sale_reference,
    sale_transaction_id: r.sale_transaction_id,
    participant_id: r.participant_id,
    refunded_amount_cents: r.refunded_amount,
    refunded_amount: r.refunded_amount,
    requested_amount_cents: r.amount_requested,
    currency: CURRENCY,
    status: r.status,
    reason: r.reason,
    refund_from: r.refund_from,
    external_refund_id: r.external_refund_id,
    idempotency_key: r.idempotency_key,
    refund_request_id: r.refund_request_id,
    is_full_refund: r.is_full_refund,
    remaining_amount_cents: r.remaining_amount,
    breakdown: {
      from_creator_cents: r.from_creator,
      from_platform_cents: r.from_platform,
      sales_tax_cents: r.sales_tax,
      hold_amount_used_cents: r.hold_amount_used,
      creator_receivable_cents: r.creator_receivable_amount,
    },
    shortfall_policy: r.shortfall,
    failure_code: r.failure_code,
    failure_reason: r.failure_reason,
    // A live card refund: where it stands at the processor (null for sandbox and non-card sales).
    processor_status: r.processor_status === "none" ? null : r.processor_status,
    processor_refund_id: r.processor_refund_id,
    reversal_transaction_id: r.reversal_transaction_id,
    metadata: r.metadata,
    livemode: r.livemode,
    created_at: r.created_at.toISOString(),
    completed_at: iso(r.completed_at),
  };
}

export function presentRefundRequest(r: RefundRequestRow): Record<string, unknown> {
  return {
    id: r.id,
    object: "refund_request",
    sale_reference: r.sale_reference,
    customer_id: r.customer_id,
    customer_email: r.customer_email,
    amount_cents: r.amount,
    currency: CURRENCY,
    reason: r.reason,
    refund_from: r.refund_from,
    status: r.status,
    refund_id: r.refund_id,
    refund_transaction_id: r.refund_transaction_id,
    rejection_reason: r.rejection_reason,
    failure_reason: r.failure_reason,
    cancellation_reason: r.cancellation_reason,
    cancelled_by: r.cancelled_by,
    reviewed_by_actor: r.reviewed_by_actor,
    livemode: r.livemode,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    reviewed_at: iso(r.reviewed_at),
    completed_at: iso(r.completed_at),
    cancelled_at: iso(r.cancelled_at),
    expires_at: r.expires_at.toISOString(),
    metadata: r.metadata,
  };
}

/** `sale.refunded`: the sale, this refund, and what remains refundable of the sale after it. */
export function saleRefundedData(r: RefundRow): Record<string, unknown> {
  return {
    sale_reference: r.sale_reference,
    sale_transaction_id: r.sale_transaction_id,
    participant_id: r.participant_id,
    refund_id: r.id,
    refund_transaction_id: r.transaction_id,
    refund_request_id: r.refund_request_id,
    amount_cents: r.refunded_amount,
    refunded_amount_cents: r.refunded_amount,
    remaining_amount_cents: r.remaining_amount,
    sale_amount_cents: r.sale_gross,
    is_full_refund: r.is_full_refund,
    refund_from: r.refund_from,
    currency: CURRENCY,
    breakdown: { from_creator_cents: r.from_creator, from_platform_cents: r.from_platform },
    sandbox: !r.livemode,
  };
}
