/**
 * Running the payout schedules that are due (the leader job, and `admin payouts run-schedules`): each due
 * schedule is claimed (no two runs work on one at once), pays its period as ONE payout through requestPayout
 * with reference `schedule:<participant>:<period>` (so a run repeated, raced or restarted after a crash never pays
 * twice), or records why it paid nothing (`payout.skipped`), then moves to its next run. Schedules are read in
 * bounded batches, in key order, so a pass ends even when some schedules keep failing.
 *
 * The amount is the participant's payable balance (the ledger's `payable_balance_cents`, less reserves, when it
 * shows one; else the available balance), no more than the wallet held `delay_days` ago, paid only when positive
 * and at least `minimum_amount_cents`. A live schedule pays only an eligible participant (requestPayout checks).
 */
import { DomainError, newUuid, type Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import { nextRunAfter, periodKey, runAtOrBefore, scheduleReference } from "../domain/schedule.ts";
import type { PayoutsDeps } from "./deps.ts";
import type { DueCutoff, ScheduleKey, ScheduleRow, ScheduleRun } from "./ports.ts";
import { requestPayout } from "./request-payout.ts";
import { balanceAsOf } from "./wallet-history.ts";

export interface RunSummary {
  runs: number;
  paid: number;
  skipped: number;
}

export interface RunOptions {
  batchMax: number;
  /** How long a claim lasts: longer than one run takes (a crashed run's schedules are taken again after it). */
  leaseMs: number;
  /** Run as if it were this time, for every tenant (the operator's `--at`); default each tenant's own clock. */
  at?: Date | undefined;
  signal?: AbortSignal | undefined;
  /** Told after each batch with the totals so far. */
  onBatch?: ((summary: RunSummary) => void) | undefined;
}

type Outcome = "paid" | "skipped" | "none";

const DAY_MS = 86_400_000;
/** Refusals that mean this period pays nothing: recorded as the skip's reason. */
const SKIP_CODES = new Set([
  "payout_not_eligible",
  "rail_not_enabled",
  "insufficient_balance",
  "participant_not_found",
  "wallet_not_found",
  "wallet_not_active",
  "amount_too_large",
]);
/**
 * A refusal's reason as the skip records it: its code, except a live participant whose bank account a return
 * disabled, which says so (`bank_account_disabled`): money cannot go there whatever else is missing, and the
 * fix (a new account) is not one `payout_not_eligible` names.
 */
function skipReason(e: DomainError): string {
  if (e.code !== "payout_not_eligible") return e.code;
  const issues = (e.extra?.["eligibility"] as { issues?: unknown } | undefined)?.issues;
  return Array.isArray(issues) && issues.includes("bank_account_disabled") ? "bank_account_disabled" : e.code;
}

/** Answers meaning the period's payout exists already (an earlier run, or one the reconciler finishes). */
const EXISTS_CODES = new Set(["duplicate_reference_id", "idempotency_conflict", "service_timeout"]);

/** Live runs on real time: the cutoff's base, each sandbox's advance added per org. */
const LIVE: Tenant = { orgId: "", livemode: true };

export async function runDueSchedules(deps: PayoutsDeps, opts: RunOptions): Promise<RunSummary> {
  const token = newUuid();
  const cutoff: DueCutoff = opts.at !== undefined ? { at: opts.at, advanced: new Map() } : { at: deps.clock.now(LIVE), advanced: deps.clock.advanced() };
  const summary: RunSummary = { runs: 0, paid: 0, skipped: 0 };
  let after: ScheduleKey | undefined;
  while (opts.signal?.aborted !== true) {
    const batch = await deps.schedules.claimDue(cutoff, after, opts.batchMax, token, opts.leaseMs);
    const outcomes = await Promise.all(batch.map((row) => runOne(deps, row, token, opts.at)));
    for (const o of outcomes) {
      if (o === "none") continue;
      summary.runs++;
      summary[o]++;
    }
    opts.onBatch?.({ ...summary });
    if (batch.length < opts.batchMax) break;
    after = batch[batch.length - 1];
  }
  return summary;
}

/** One claimed schedule; a failure leaves it due (a later pass retries it) and is logged, never thrown. */
async function runOne(deps: PayoutsDeps, row: ScheduleRow, token: string, at: Date | undefined): Promise<Outcome> {
  const key: ScheduleKey = { org_id: row.org_id, livemode: row.livemode, participant_id: row.participant_id };
  const tenant: Tenant = { orgId: row.org_id, livemode: row.livemode };
  const now = at ?? deps.clock.now(tenant);
  const runAt = runAtOrBefore(row, now);
  if (row.interval === "manual" || row.next_run_at === null || runAt === undefined || row.next_run_at > now) {
    await deps.schedules.finish(key, token, undefined);
    return "none";
  }
  try {
    const period = periodKey(row.interval, runAt);
    const outcome = (await deps.schedules.findRun(key, period)) !== undefined ? "none" : await payPeriod(deps, tenant, row, period, now);
    // The next run after now: a clock moved past several runs pays once, for the latest period.
    await deps.schedules.finish(key, token, nextRunAfter(row, now) ?? undefined);
    return outcome;
  } catch (err) {
    deps.log.warn({ err, org_id: row.org_id, livemode: row.livemode, participant_id: row.participant_id }, "payout schedule run failed; retried next pass");
    await deps.schedules.finish(key, token, undefined).catch(() => undefined);
    return "none";
  }
}

/** The amount this period may pay, or why it pays nothing. */
async function amountOf(deps: PayoutsDeps, tenant: Tenant, row: ScheduleRow, now: Date): Promise<{ amount: number } | { reason: string }> {
  const p = await deps.ledger.getParticipant(tenant, row.participant_id);
  let amount = p.payable_balance_cents ?? p.available_balance_cents;
  if (row.delay_days > 0) {
    // Money that arrived within the delay stays: the balance the wallet held delay_days ago is the most paid.
    amount = Math.min(amount, await balanceAsOf(deps.ledger, tenant, p.wallet_id, new Date(now.getTime() - row.delay_days * DAY_MS)));
  }
  if (amount <= 0) return { reason: "no_balance" };
  if (amount < row.minimum_amount_cents) return { reason: "below_minimum" };
  return { amount };
}

async function payPeriod(deps: PayoutsDeps, tenant: Tenant, row: ScheduleRow, period: string, now: Date): Promise<Outcome> {
  const base = { org_id: row.org_id, livemode: row.livemode, participant_id: row.participant_id, period };
  const skip = async (reason: string): Promise<Outcome> => {
    const event: NewEvent = {
      type: "payout.skipped",
      org_id: row.org_id,
      livemode: row.livemode,
      data: { participant_id: row.participant_id, period, reason },
    };
    const run: ScheduleRun = { ...base, outcome: "skipped", payout_id: null, amount_cents: null, reason };
    return (await deps.schedules.recordRun(run, event)) ? "skipped" : "none";
  };
  const paid = async (payoutId: string, amount: number, fresh: boolean): Promise<Outcome> => {
    const recorded = await deps.schedules.recordRun({ ...base, outcome: "paid", payout_id: payoutId, amount_cents: amount, reason: null }, undefined);
    return recorded && fresh ? "paid" : "none";
  };
  const decided = await amountOf(deps, tenant, row, now);
  if ("reason" in decided) return skip(decided.reason);
  const referenceId = scheduleReference(row.participant_id, period);
  try {
    const payout = await requestPayout(deps, tenant, {
      participant_id: row.participant_id,
      amount: decided.amount,
      reference_id: referenceId,
      reference_type: "payout_schedule",
      description: `Scheduled payout ${period}`,
    });
    return await paid(payout.id, payout.amount, true);
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    if (SKIP_CODES.has(e.code)) return skip(skipReason(e));
    if (!EXISTS_CODES.has(e.code)) throw e;
    const existing = await deps.payouts.findByReference(tenant, referenceId);
    if (existing === undefined || existing.status === "refused") throw e;
    return paid(existing.id, existing.amount, e.code === "service_timeout");
  }
}
