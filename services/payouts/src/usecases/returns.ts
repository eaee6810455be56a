/**
 * Ingesting a bank's return file: each returned entry names the trace number of the credit it returns and an
 * R code. Its payout (processing, or already paid) fails: the creator's wallet gets the money back through the
 * ledger (`payout:<id>:return`), the payout shows the code's reason, and `payout.failed` is emitted
 * (transitions.ts). A return saying the account cannot take money (R02, R03, R04… UNUSABLE_ACCOUNT_RETURNS in
 * domain/nacha-returns.ts) also disables the participant's bank account in the payout's failing statement, and
 * the participant's payouts still waiting for a file to that account are cancelled (cancel-unfiled.ts). An org
 * that charges a return fee (`admin payouts set-return-fee`) has it taken from the money returned. The
 * notifications of change correct bank accounts (notices.ts). Idempotent: a return for a payout already failed,
 * and a notice already applied, change nothing.
 */
import { DomainError } from "@treasury/contracts";
import { ReturnFileError, unusableAccountReason } from "../domain/nacha-returns.ts";
import { cancelUnfiledInto, type CancelOutcome } from "./cancel-unfiled.ts";
import type { PayoutsDeps } from "./deps.ts";
import { applyNotices, type NoticeOutcome } from "./notices.ts";
import { driveAction } from "./transitions.ts";

export interface ReturnsResult {
  returns: number;
  /** `bank_account_disabled`: this return disabled the participant's bank account (an unusable-account code). */
  failed: Array<{ payout_id: string; trace_number: string; return_code: string; bank_account_disabled: boolean }>;
  already_failed: string[];
  /** Returns naming no payout of ours (or a payout in no state a return applies to). */
  unmatched: Array<{ trace_number: string; return_code: string; reason: string }>;
  /** Every notification of change: applied, already applied, or not applied with why. */
  notices: NoticeOutcome[];
  /** Payouts not yet filed to a bank account these returns disabled: cancelled, the money back in the wallet. */
  cancelled: CancelOutcome["cancelled"];
  /** Recorded, but the ledger did not answer: the reconciler finishes them. */
  pending: Array<{ payout_id: string; error: string }>;
}

export async function ingestReturns(deps: PayoutsDeps, text: string): Promise<ReturnsResult> {
  if (deps.rail === undefined) throw new DomainError("rail_not_enabled", "The bank payout rail is not configured");
  let parsed;
  try {
    parsed = deps.rail.parseReturns(text);
  } catch (e) {
    if (e instanceof ReturnFileError) throw new DomainError("validation_error", `Not a readable return file: ${e.message}`);
    throw e;
  }
  const result: ReturnsResult = {
    returns: parsed.returns.length,
    failed: [],
    already_failed: [],
    unmatched: [],
    notices: [],
    cancelled: [],
    pending: [],
  };
  for (const r of parsed.returns) {
    const row = await deps.payouts.findByTrace(r.originalTrace);
    const miss = (reason: string) => result.unmatched.push({ trace_number: r.originalTrace, return_code: r.returnCode, reason });
    if (row === undefined) {
      miss("no payout has this trace number");
      continue;
    }
    if (row.status === "failed") {
      result.already_failed.push(row.id);
      continue;
    }
    if (row.net_amount !== r.amountCents) {
      miss(`returned amount ${r.amountCents} is not the payout's ${row.net_amount}`);
      continue;
    }
    const marked = await deps.payouts.markAction(row.id, "return", ["processing", "paid"], {
      return_code: r.returnCode,
      return_from: row.status === "paid" ? "platform_cash" : "payouts_in_transit",
      return_fee: await deps.payouts.returnFee({ orgId: row.org_id, livemode: row.livemode }),
    });
    if (marked === undefined) {
      miss(`payout ${row.id} is ${row.status}${row.action !== null ? ` with a ${row.action} in progress; ingest the file again shortly` : ""}`);
      continue;
    }
    try {
      const done = await driveAction(deps, marked);
      if (done.status === "failed") {
        const disabled =
          unusableAccountReason(r.returnCode) !== undefined && (await disabledBy(deps, done.org_id, done.livemode, done.participant_id, done.id));
        result.failed.push({ payout_id: done.id, trace_number: r.originalTrace, return_code: r.returnCode, bank_account_disabled: disabled });
        if (disabled) await cancelUnfiledInto(deps, { orgId: done.org_id, livemode: done.livemode }, done.participant_id, result);
      }
    } catch (e) {
      result.pending.push({ payout_id: row.id, error: e instanceof Error ? e.message : String(e) });
    }
  }
  result.notices = await applyNotices(deps, parsed.notices);
  return result;
}

async function disabledBy(deps: PayoutsDeps, orgId: string, livemode: boolean, participantId: string, payoutId: string): Promise<boolean> {
  const account = await deps.bankAccounts.find({ orgId, livemode }, participantId);
  return account?.status === "disabled" && account.disabled_by_payout_id === payoutId;
}
