/** Wire shape of a checkout session (docs/api.md, Checkout). */
import { checkoutSplit } from "../domain/checkout-sale.ts";
import type { CheckoutRow } from "../domain/records.ts";

/** `completing` is internal (the sale is being recorded): the wire still says pending until it settles. */
export function publicStatus(row: CheckoutRow, now: Date): "pending" | "completed" | "failed" | "expired" {
  if (row.status === "completed") return "completed";
  if (row.status === "failed") return "failed";
  if (row.status === "pending" && row.expires_at.getTime() <= now.getTime()) return "expired";
  return "pending";
}

export function saleReferenceOf(row: { id: string }): string {
  return `checkout:${row.id}`;
}

/** A session's breakdown: its shares as created, and after the processor's fee once a live payment reports it. */
function breakdownOf(row: CheckoutRow): Record<string, unknown> {
  const split = checkoutSplit(row);
  return {
    gross_amount_cents: split.gross,
    sales_tax_amount_cents: split.salesTax,
    creator_amount_cents: split.creatorAmount,
    platform_amount_cents: split.platformAmount,
    creator_percent: split.creatorBps / 100,
    // Only a payment the card processor took has a fee; the fields appear once it is known.
    ...(split.processingFee > 0 ? { processing_fee_cents: split.processingFee, processing_fee_paid_by: split.feePaidBy } : {}),
  };
}

export function presentCheckout(row: CheckoutRow, now: Date): Record<string, unknown> {
  const completed = row.status === "completed";
  return {
    id: row.id,
    object: "checkout_session",
    mode: row.mode,
    provider: row.provider,
    sandbox: !row.livemode,
    livemode: row.livemode,
    checkout_url: row.checkout_url,
    payment_id: row.payment_id,
    status: publicStatus(row, now),
    amount: row.amount,
    currency: row.currency,
    payment_rail: row.payment_rail,
    participant_id: row.participant_id,
    // The official SDK reads the creator as `creator_id` and the sale's reference as `reference_id`.
    creator_id: row.participant_id,
    product_id: row.product_id,
    product_name: row.product_name,
    customer_email: row.customer_email,
    customer_id: row.customer_id,
    buyer_user_id: row.buyer_user_id,
    purchase_mode: row.mode === "direct_funded_wallet" ? "direct_funded_wallet" : null,
    hold_funds: row.hold_funds,
    success_url: row.success_url,
    cancel_url: row.cancel_url,
    expires_at: row.expires_at.toISOString(),
    sale_reference: completed ? saleReferenceOf(row) : null,
    reference_id: completed ? saleReferenceOf(row) : null,
    sale_transaction_id: row.sale_transaction_id,
    hold_id: row.hold_id,
    breakdown: breakdownOf(row),
    failure_reason: row.failure_reason,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}
