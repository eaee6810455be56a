/** The payout object of the API (docs/api.md, Payouts). */
import { outboxRowValues, type OutboxRowValues } from "@treasury/service-kit";
import type { PayoutRow } from "../domain/records.ts";

export const CURRENCY = "USD";

export function publicStatus(row: Pick<PayoutRow, "status">): "pending" | "under_review" | "processing" | "paid" | "failed" {
  if (row.status === "posting" || row.status === "refused") return "pending";
  return row.status;
}

export function presentPayout(row: PayoutRow, override: { status?: "pending" } = {}): Record<string, unknown> {
  return {
    id: row.id,
    object: "payout",
    transaction_id: row.transaction_id,
    participant_id: row.participant_id,
    wallet_id: row.wallet_id ?? row.requested_wallet_id,
    status: override.status ?? publicStatus(row),
    payout_rail: row.rail,
    simulated: row.rail === "sandbox",
    livemode: row.livemode,
    currency: CURRENCY,
    gross_amount_cents: row.amount,
    fees_cents: row.fees,
    net_amount_cents: row.net_amount,
    fees_paid_by: row.fees_paid_by,
    previous_balance_cents: row.previous_balance,
    new_balance_cents: row.new_balance,
    bank_transfer_id: row.trace_number,
    bank_transfer_status: row.bank_transfer_status,
    failure_reason: row.failure_reason,
    risk_evaluation_id: row.risk_evaluation_id,
    destination:
      row.dest_last4 === null
        ? null
        : { type: "bank_account", routing_number: row.dest_routing_number, account_type: row.dest_account_type, last4: row.dest_last4 },
    reference_id: row.reference_id,
    reference_type: row.reference_type,
    description: row.description,
    payout_method: row.payout_method,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    paid_at: row.paid_at?.toISOString() ?? null,
    failed_at: row.failed_at?.toISOString() ?? null,
  };
}

/** `payout.failed` of a payout as it now stands. */
export function payoutFailedEvent(row: PayoutRow): OutboxRowValues {
  return outboxRowValues({ type: "payout.failed", org_id: row.org_id, livemode: row.livemode, data: presentPayout(row) });
}
