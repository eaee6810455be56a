/** Wire shapes of the ledger's resources (docs/api.md). */
import type { HoldRow, ParticipantRow, ParticipantWithBalance, WalletRow } from "./rows.ts";

export const CURRENCY = "USD";
const DAY_MS = 86_400_000;

export function presentWallet(w: WalletRow): Record<string, unknown> {
  const creator = w.account_type === "creator_earnings";
  return {
    id: w.id,
    wallet_id: w.id,
    object: "wallet",
    wallet_type: w.account_type,
    scope_type: creator ? "participant" : "customer",
    owner_id: w.owner_id,
    owner_type: w.owner_type,
    participant_id: w.participant_id,
    account_type: creator ? "creator_balance" : "user_wallet",
    name: w.name,
    currency: CURRENCY,
    status: w.status,
    balance: w.balance,
    held_amount: w.held_amount,
    available_balance: w.balance - w.held_amount,
    redeemable: w.redeemable,
    transferable: w.transferable,
    topup_supported: w.topup_supported,
    payout_supported: w.payout_supported,
    created_at: w.created_at.toISOString(),
    metadata: w.metadata,
  };
}

export function holdReady(h: HoldRow, now: Date): boolean {
  return h.hold_until === null || h.hold_until.getTime() <= now.getTime();
}

export function presentHold(h: HoldRow, now: Date): Record<string, unknown> {
  return {
    id: h.id,
    participant_id: h.participant_id,
    wallet_id: h.wallet_id,
    amount: h.amount,
    currency: CURRENCY,
    hold_reason_code: h.hold_reason_code,
    hold_reason_description: h.hold_reason_description,
    held_since: h.created_at.toISOString(),
    days_held: Math.max(0, Math.floor((now.getTime() - h.created_at.getTime()) / DAY_MS)),
    hold_until: h.hold_until?.toISOString() ?? null,
    auto_release: h.auto_release,
    ready_for_release: h.status === "held" && holdReady(h, now),
    release_status: h.status,
    transaction_reference: h.transaction_id,
    reference_id: h.reference_id,
    release_transfer_to_participant_id: h.release_transfer_to_participant_id,
    released_at: h.released_at?.toISOString() ?? null,
    metadata: h.metadata,
    created_at: h.created_at.toISOString(),
  };
}

/** The release record of a released hold (answered again, unchanged, to a second release). */
export function presentRelease(h: HoldRow): Record<string, unknown> {
  const executed = h.release_transfer_executed === true;
  return {
    id: h.release_id,
    hold_id: h.id,
    status: "released",
    availability_released: true,
    executed,
    transfer_id: executed ? h.release_transaction_id : null,
    transfer_status: executed ? "completed" : null,
    transaction_id: h.release_transaction_id,
    amount: h.amount,
    currency: CURRENCY,
    released_at: h.released_at?.toISOString() ?? null,
  };
}

function splitPercent(bps: number | null): number | null {
  return bps === null ? null : bps / 100;
}

export function presentParticipant(p: ParticipantRow, created?: boolean): Record<string, unknown> {
  return {
    id: p.participant_id,
    account_id: p.account_id,
    wallet_id: p.wallet_id,
    ...(created !== undefined ? { created } : {}),
    user_id: p.user_id,
    display_name: p.display_name,
    // The official SDK reads `name`: the same value, beside ours.
    name: p.display_name,
    email: p.email,
    default_split_percent: splitPercent(p.default_split_bps),
    payout_preferences: p.payout_preferences,
    metadata: p.metadata,
    created_at: p.created_at.toISOString(),
  };
}

/**
 * A participant row of get/list: the balance snapshot (with its reserve figures: usecases/reserves.ts) and its
 * active holds.
 */
export function presentParticipantBalance(
  p: ParticipantWithBalance,
  holds: readonly HoldRow[],
  reserve: { reserved_amount_cents: number; payable_balance_cents: number },
): Record<string, unknown> {
  return {
    ...presentParticipant(p),
    // Negative while the creator owes the platform more than the wallet holds (a refund after a payout): the
    // posting engine repays the receivable from the next earnings first (ADR 0009).
    ledger_balance_cents: p.balance - p.owed,
    owed_amount_cents: p.owed,
    held_amount_cents: p.held_amount,
    available_balance_cents: p.balance - p.held_amount,
    reserved_amount_cents: reserve.reserved_amount_cents,
    payable_balance_cents: reserve.payable_balance_cents,
    holds: holds.map((h) => ({
      hold_id: h.id,
      amount_cents: h.amount,
      reason: h.hold_reason_code,
      release_date: h.hold_until?.toISOString() ?? null,
      status: h.status,
    })),
  };
}
