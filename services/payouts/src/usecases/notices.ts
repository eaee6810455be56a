/**
 * Applying the notifications of change in a bank's return file: each names the trace number of a credit we sent
 * and what the receiving bank says its destination should be (domain/nacha-changes.ts). The participant whose
 * payout it names gets the corrected routing number, account number or account type on its bank account: the
 * details sealed again with the active key (bound to the participant, as PUT bank-account seals them) and
 * `bank_account.updated` written, in one transaction.
 *
 * A correction applies only to the account the payout was sent to: when the participant has set another account
 * since (its details are no longer the payout's destination), the notice is not applied, so an old notice never
 * overwrites a newer account. A notice already applied (the account holds the corrected details) changes nothing,
 * so a file ingested twice changes nothing. The account's status is kept: a disabled account stays disabled
 * until the participant sets a new one. Answers name the account by its last four digits only.
 */
import type { BankCorrection } from "../domain/nacha-changes.ts";
import { readCorrection } from "../domain/nacha-changes.ts";
import type { AchNotice } from "../domain/nacha-returns.ts";
import type { BankAccountRow, PayoutRow } from "../domain/records.ts";
import { presentBankAccount } from "./bank-account.ts";
import { bankAccountAad, payoutDestinationAad, requireSealer, type PayoutsDeps, type SealedBankDetails } from "./deps.ts";

export interface NoticeOutcome {
  trace_number: string;
  change_code: string;
  outcome: "applied" | "already_applied" | "not_applied";
  payout_id: string | null;
  participant_id: string | null;
  /** What changed (applied) or would have: routing_number, account_number, account_type. */
  changed: Array<keyof BankCorrection>;
  /** The account after the notice (applied, already applied): its routing number, type and last four digits. */
  account: { routing_number: string; account_type: string; last4: string } | null;
  /** Why it was not applied. */
  reason: string | null;
}

interface Details {
  routing_number: string;
  account_type: "checking" | "savings";
  account_number: string;
}

const sameDetails = (a: Details, b: Details): boolean =>
  a.routing_number === b.routing_number && a.account_type === b.account_type && a.account_number === b.account_number;

export async function applyNotices(deps: PayoutsDeps, notices: readonly AchNotice[]): Promise<NoticeOutcome[]> {
  const out: NoticeOutcome[] = [];
  for (const n of notices) out.push(await applyNotice(deps, n));
  return out;
}

async function applyNotice(deps: PayoutsDeps, n: AchNotice): Promise<NoticeOutcome> {
  const base = { trace_number: n.originalTrace, change_code: n.changeCode, payout_id: null, participant_id: null, changed: [], account: null };
  const notApplied = (reason: string, more: Partial<NoticeOutcome> = {}): NoticeOutcome => ({ ...base, ...more, outcome: "not_applied", reason });
  const reading = readCorrection(n.changeCode, n.correctedData);
  if (!reading.ok) return notApplied(reading.reason);
  const changed = Object.keys(reading.correction) as Array<keyof BankCorrection>;
  const payout = await deps.payouts.findByTrace(n.originalTrace);
  if (payout === undefined) return notApplied("no payout has this trace number", { changed });
  const who = { payout_id: payout.id, participant_id: payout.participant_id, changed };
  const tenant = { orgId: payout.org_id, livemode: payout.livemode };
  const account = await deps.bankAccounts.find(tenant, payout.participant_id);
  if (account === undefined) return notApplied("the participant has no bank account", who);
  const sealer = requireSealer(deps);
  const held = sealer.openJson<SealedBankDetails>(account.sealed, bankAccountAad(tenant, payout.participant_id));
  const current: Details = { routing_number: account.routing_number, account_type: account.account_type, account_number: held.account_number };
  const corrected: Details = { ...current, ...reading.correction };
  const shown = (d: Details) => ({ routing_number: d.routing_number, account_type: d.account_type, last4: d.account_number.slice(-4) });
  if (sameDetails(current, corrected)) return { ...base, ...who, outcome: "already_applied", account: shown(current), reason: null };
  const destination = destinationOf(deps, payout);
  if (destination === undefined || !sameDetails(current, destination)) {
    return notApplied(`the participant's bank account changed since payout ${payout.id}; the notice is about the earlier account`, who);
  }
  const details: SealedBankDetails = { account_holder_name: held.account_holder_name, account_number: corrected.account_number };
  const values = {
    routing_number: corrected.routing_number,
    account_type: corrected.account_type,
    last4: corrected.account_number.slice(-4),
    sealed: sealer.sealJson(details, bankAccountAad(tenant, payout.participant_id)),
    sealed_key_id: sealer.activeKeyId,
  };
  const saved = await deps.bankAccounts.correct(tenant, payout.participant_id, account.sealed, values, (row: BankAccountRow) => ({
    type: "bank_account.updated",
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    data: presentBankAccount(row, held.account_holder_name),
  }));
  if (saved === undefined) return notApplied("the bank account changed while the notice was applied; ingest the file again", who);
  deps.log.info(
    { payout_id: payout.id, participant_id: payout.participant_id, change_code: n.changeCode, changed, last4: saved.last4 },
    "notification of change applied",
  );
  return { ...base, ...who, outcome: "applied", account: shown(corrected), reason: null };
}

/** Where the payout was sent: the destination it keeps from its request (sealed, bound to the payout). */
function destinationOf(deps: PayoutsDeps, payout: PayoutRow): Details | undefined {
  if (payout.dest_sealed === null || payout.dest_routing_number === null || payout.dest_account_type === null) return undefined;
  const dest = requireSealer(deps).openJson<SealedBankDetails>(payout.dest_sealed, payoutDestinationAad(payout.id));
  return { routing_number: payout.dest_routing_number, account_type: payout.dest_account_type, account_number: dest.account_number };
}
