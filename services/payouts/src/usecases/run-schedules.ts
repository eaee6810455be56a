/**
 * Running the payout schedules that are due (the leader job, and `admin payouts run-schedules`): each due
 * schedule is claimed (no two runs work on one at once), pays its period as ONE payout through requestPayout
 * with reference `schedule:<participant>:<period>` (so a run repeated, raced or restarted after a crash never pays
 * twice), or records why it paid nothing (`payout.skipped`), then moves to its next run. Schedules are read in
 * bounded batches, in key order, so a pass ends even when some schedules keep failing.
 *
 * A batch costs a fixed number of statements and ledger reads whatever its size: one claim, one look for periods
 * already recorded, one read of the participants' balances per org and environment, and one statement that
 * records every run with its event and moves every schedule on. Only the payouts themselves go one by one (each
 * its own reference, and a live one its own eligibility check), PAYOUTS_IN_FLIGHT_MAX at once over the batches
 * in flight.
 *
 * The amount is the participant's payable balance (the ledger's `payable_balance_cents`, less reserves, when it
 * shows one; else the available balance), no more than the wallet held `delay_days` ago, paid only when positive
 * and at least `minimum_amount_cents`. A live schedule pays only an eligible participant (requestPayout checks).
 */
import { DomainError, newUuid, type Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import { nextRunAfter, periodKey, runAtOrBefore, scheduleReference } from "../domain/schedule.ts";
import type { PayoutsDeps } from "./deps.ts";
import type { DueCutoff, LedgerParticipant, ScheduleKey, ScheduleOutcome, ScheduleRow, ScheduleRun } from "./ports.ts";
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

/**
 * Batches claimed and worked on at once: the next batch's claim and reads overlap the payouts of the one before,
 * so the ledger is never idle while a batch is being read or recorded.
 */
const BATCHES_IN_FLIGHT = 2;
/**
 * Payouts requested at once over the batches in flight. One org's schedules all go to the ledger as that org's
 * requests, and a busy ledger answers an org past its share of its RPC slots (a quarter of RPC_CONCURRENCY_MAX,
 * 64 by default) "unavailable": staying within it keeps a large run from being refused by its own ledger.
 */
const PAYOUTS_IN_FLIGHT_MAX = 64;

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
  // A hard risk policy refused the period's payout; one held for review is the period's payout (under_review).
  "risk_denied",
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
  const running = new Set<Promise<void>>();
  let after: ScheduleKey | undefined;
  try {
    while (opts.signal?.aborted !== true) {
      const batch = await deps.schedules.claimDue(cutoff, after, opts.batchMax, token, opts.leaseMs);
      const work: Promise<void> = runBatch(deps, batch, token, opts.at)
        .then((outcomes) => {
          for (const o of outcomes) {
            if (o === "none") continue;
            summary.runs++;
            summary[o]++;
          }
          opts.onBatch?.({ ...summary });
        })
        .finally(() => running.delete(work));
      running.add(work);
      if (batch.length < opts.batchMax) break;
      after = batch[batch.length - 1];
      if (running.size >= BATCHES_IN_FLIGHT) await Promise.race(running);
    }
  } finally {
    await Promise.all(running);
  }
  return summary;
}

/** A claimed schedule whose run is due now, for this period. */
interface DueRun {
  row: ScheduleRow;
  key: ScheduleKey;
  tenant: Tenant;
  now: Date;
  period: string;
}

/** What one schedule's run came to: how the batch settles it, and what it counts as once settled. */
interface Decided {
  settle: ScheduleOutcome;
  /** Counted as paid only if its run was recorded now and this run made the payout. */
  counts: Outcome;
}

/** A period paid or skipped: the run to record, its event, and what it counts as once recorded. */
interface Recorded {
  run: ScheduleRun;
  event: NewEvent | undefined;
  counts: Outcome;
}

/** One claimed batch, settled in one statement. A failure is logged and leaves its schedules due, never thrown. */
async function runBatch(deps: PayoutsDeps, rows: readonly ScheduleRow[], token: string, at: Date | undefined): Promise<Outcome[]> {
  const keys = rows.map((r): ScheduleKey => ({ org_id: r.org_id, livemode: r.livemode, participant_id: r.participant_id }));
  try {
    const decided = await decideBatch(deps, rows, keys, at);
    const recorded = await deps.schedules.settle(
      token,
      decided.map((d) => d.settle),
    );
    return decided.map((d, i) => (recorded[i] === true ? d.counts : "none"));
  } catch (err) {
    deps.log.warn({ err, schedules: rows.length }, "payout schedule batch failed; its schedules are retried next pass");
    const left = keys.map((key) => ({ key, run: undefined, event: undefined, next: undefined }));
    await deps.schedules.settle(token, left).catch(() => undefined);
    return rows.map(() => "none");
  }
}

/** Each claimed schedule's outcome, in order: not due, recorded already, paid, skipped, or failed (left due). */
async function decideBatch(deps: PayoutsDeps, rows: readonly ScheduleRow[], keys: readonly ScheduleKey[], at: Date | undefined): Promise<Decided[]> {
  const out: Decided[] = keys.map((key) => ({ settle: { key, run: undefined, event: undefined, next: undefined }, counts: "none" }));
  const due: { i: number; run: DueRun }[] = [];
  rows.forEach((row, i) => {
    const key = keys[i] as ScheduleKey;
    const tenant: Tenant = { orgId: row.org_id, livemode: row.livemode };
    const now = at ?? deps.clock.now(tenant);
    const runAt = runAtOrBefore(row, now);
    if (row.interval === "manual" || row.next_run_at === null || runAt === undefined || row.next_run_at > now) return;
    due.push({ i, run: { row, key, tenant, now, period: periodKey(row.interval, runAt) } });
  });
  const recorded = new Set((await deps.schedules.findRuns(due.map((d) => ({ ...d.run.key, period: d.run.period })))).map(periodId));
  const toPay = due.filter((d) => !recorded.has(periodId({ ...d.run.key, period: d.run.period })));
  const balances = await readBalances(
    deps,
    toPay.map((d) => d.run),
  );
  // The next run after now: a clock moved past several runs pays once, for the latest period.
  for (const d of due)
    out[d.i] = { settle: { key: d.run.key, run: undefined, event: undefined, next: nextRunAfter(d.run.row, d.run.now) ?? undefined }, counts: "none" };
  await inParallel(toPay, PAYOUTS_IN_FLIGHT_MAX / BATCHES_IN_FLIGHT, async ({ i, run }) => {
    try {
      const p = balances.get(tenantKey(run.tenant))?.get(run.row.participant_id);
      if (p === undefined) throw new Error(`the ledger answered no balance for participant ${run.row.participant_id}`);
      const result = await payPeriod(deps, run, p);
      out[i] = { settle: { ...(out[i] as Decided).settle, run: result.run, event: result.event }, counts: result.counts };
    } catch (err) {
      deps.log.warn(
        { err, org_id: run.key.org_id, livemode: run.key.livemode, participant_id: run.key.participant_id },
        "payout schedule run failed; retried next pass",
      );
      out[i] = { settle: { key: run.key, run: undefined, event: undefined, next: undefined }, counts: "none" };
    }
  });
  return out;
}

function periodId(p: ScheduleKey & { period: string }): string {
  return `${p.org_id}\u0000${String(p.livemode)}\u0000${p.participant_id}\u0000${p.period}`;
}

function tenantKey(t: Tenant): string {
  return `${t.orgId}\u0000${String(t.livemode)}`;
}

/**
 * The balances of the participants of these runs: one ledger read per org and environment (a batch holds at most
 * PAYOUTS_SCHEDULE_BATCH_MAX, within what one read may name). A read that fails leaves its participants out
 * (their runs fail and stay due).
 */
async function readBalances(deps: PayoutsDeps, runs: readonly DueRun[]): Promise<Map<string, Map<string, LedgerParticipant>>> {
  const byTenant = new Map<string, { tenant: Tenant; ids: string[] }>();
  for (const r of runs) {
    const k = tenantKey(r.tenant);
    const group = byTenant.get(k) ?? { tenant: r.tenant, ids: [] };
    group.ids.push(r.row.participant_id);
    byTenant.set(k, group);
  }
  const out = new Map<string, Map<string, LedgerParticipant>>();
  await Promise.all(
    [...byTenant].map(async ([k, { tenant, ids }]) => {
      try {
        out.set(k, await deps.ledger.participantBalances(tenant, ids));
      } catch (err) {
        deps.log.warn({ err, org_id: tenant.orgId, livemode: tenant.livemode, participants: ids.length }, "ledger balances not read; retried next pass");
      }
    }),
  );
  return out;
}

/** `work` for each item, at most `width` at once. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let item = items[next++]; item !== undefined; item = items[next++]) await work(item);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/** The amount this period may pay, or why it pays nothing. */
async function amountOf(deps: PayoutsDeps, run: DueRun, p: LedgerParticipant): Promise<{ amount: number } | { reason: string }> {
  let amount = p.payable_balance_cents ?? p.available_balance_cents;
  if (run.row.delay_days > 0) {
    // Money that arrived within the delay stays: the balance the wallet held delay_days ago is the most paid.
    // The ledger stamps a sandbox's entries on its clock, so the delay counts on the same clock the run reads.
    const asOf = new Date(run.now.getTime() - run.row.delay_days * DAY_MS);
    amount = Math.min(amount, await balanceAsOf(deps.ledger, run.tenant, p.wallet_id, asOf));
  }
  if (amount <= 0) return { reason: "no_balance" };
  if (amount < run.row.minimum_amount_cents) return { reason: "below_minimum" };
  return { amount };
}

/** The period's payout, or its skip. */
async function payPeriod(deps: PayoutsDeps, run: DueRun, p: LedgerParticipant): Promise<Recorded> {
  const { row, period, tenant } = run;
  const base = { ...run.key, period };
  const skip = (reason: string): Recorded => ({
    run: { ...base, outcome: "skipped", payout_id: null, amount_cents: null, reason },
    event: { type: "payout.skipped", org_id: row.org_id, livemode: row.livemode, data: { participant_id: row.participant_id, period, reason } },
    counts: "skipped",
  });
  const paid = (payoutId: string, amount: number, fresh: boolean): Recorded => ({
    run: { ...base, outcome: "paid", payout_id: payoutId, amount_cents: amount, reason: null },
    event: undefined,
    counts: fresh ? "paid" : "none",
  });
  const referenceId = scheduleReference(row.participant_id, period);
  const decided = await amountOf(deps, run, p);
  if ("reason" in decided) {
    // Nothing left to pay may mean the period was paid by a run that stopped before recording it (a crash):
    // its payout is the period's record, not a skip.
    const earlier = await deps.payouts.findByReference(tenant, referenceId);
    return earlier !== undefined && earlier.status !== "refused" ? paid(earlier.id, earlier.amount, false) : skip(decided.reason);
  }
  try {
    const payout = await requestPayout(deps, tenant, {
      participant_id: row.participant_id,
      amount: decided.amount,
      reference_id: referenceId,
      reference_type: "payout_schedule",
      description: `Scheduled payout ${period}`,
    });
    return paid(payout.id, payout.amount, true);
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    if (SKIP_CODES.has(e.code)) return skip(skipReason(e));
    if (!EXISTS_CODES.has(e.code)) throw e;
    const existing = await deps.payouts.findByReference(tenant, referenceId);
    if (existing === undefined || existing.status === "refused") throw e;
    return paid(existing.id, existing.amount, e.code === "service_timeout");
  }
}
