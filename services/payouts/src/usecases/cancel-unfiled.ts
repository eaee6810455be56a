/**
 * When a return disables a participant's bank account, the live payouts still waiting for a file to that same
 * account would only come back too (days later, each its own return). They are cancelled now instead: each is
 * marked `cancel` (only while `pending` with nothing in flight, so a cut that took it first wins and the bank
 * returns it as usual), then driven like any transition (transitions.ts): the money goes back to the wallet and
 * `payout.failed` says why. The reconciler finishes a cancel the ledger did not answer.
 */
import type { Tenant } from "@treasury/contracts";
import type { BankAccountRow, PayoutRow } from "../domain/records.ts";
import type { PayoutsDeps } from "./deps.ts";
import { driveAction } from "./transitions.ts";

export interface CancelOutcome {
  cancelled: Array<{ payout_id: string; participant_id: string }>;
  pending: Array<{ payout_id: string; error: string }>;
}

const sameDestination = (p: PayoutRow, a: BankAccountRow): boolean =>
  p.dest_routing_number === a.routing_number && p.dest_account_type === a.account_type && p.dest_last4 === a.last4;

export async function cancelUnfiledInto(deps: PayoutsDeps, tenant: Tenant, participantId: string, into: CancelOutcome): Promise<void> {
  const account = await deps.bankAccounts.find(tenant, participantId);
  if (account?.status !== "disabled") return;
  const reason = `bank_account_disabled: ${account.disabled_reason ?? "the bank account cannot take money"}`;
  for (const row of await deps.payouts.unfiledOf(tenant, participantId)) {
    if (!sameDestination(row, account)) continue;
    const marked = await deps.payouts.markAction(row.id, "cancel", ["pending"], { failure_reason: reason });
    if (marked === undefined) continue;
    try {
      const done = await driveAction(deps, marked);
      if (done.status === "failed") into.cancelled.push({ payout_id: done.id, participant_id: done.participant_id });
    } catch (e) {
      into.pending.push({ payout_id: row.id, error: e instanceof Error ? e.message : String(e) });
    }
  }
}
