/**
 * The service's periodic work, each a `svc.every` job started once the service is ready and stopped on shutdown:
 * the reconciler (usecases/reconcile.ts: intents and transitions left in flight, undelivered files, scheduled
 * cuts), while the key ring holds retired keys, the reseal pass (usecases/reseal.ts), and the payout schedules
 * (usecases/run-schedules.ts).
 */
import { Counter, Gauge, type Job, type Service } from "@treasury/service-kit";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { reconcilePass, type ReconcilerOptions } from "../usecases/reconcile.ts";
import { resealAll } from "../usecases/reseal.ts";
import { runDueSchedules, type RunSummary } from "../usecases/run-schedules.ts";

export interface PayoutsJobs {
  reconciler: Job<number>;
  /** One reseal pass now; answers how many values moved. */
  reseal(): Promise<number>;
  /** The payout schedules' pass (leader only: another replica answers undefined). */
  schedules: Job<RunSummary>;
}

export interface JobOptions extends ReconcilerOptions {
  reconcileIntervalMs: number;
  resealIntervalMs: number;
  resealBatchMax: number;
  /** The ids of the key ring's keys (none without keys). */
  keyIds: readonly string[];
  scheduleIntervalMs: number;
  scheduleBatchMax: number;
  scheduleLeaseMs: number;
}

/**
 * The payout schedules' pass: one replica at a time (leader), woken at once when a sandbox clock moves, its
 * progress in the logs and in `payouts_schedule_runs_total` / `payouts_schedule_pass_runs`.
 */
function registerScheduleJob(svc: Pick<Service, "every" | "log" | "metrics">, deps: PayoutsDeps, opts: JobOptions): Job<RunSummary> {
  const outcomes = new Counter({
    name: "payouts_schedule_runs_total",
    help: "Scheduled payout runs by outcome (paid, skipped) on this replica",
    labelNames: ["outcome"] as const,
    registers: [svc.metrics],
  });
  const progress = new Gauge({
    name: "payouts_schedule_pass_runs",
    help: "Runs of the schedules pass in progress (or last ended) on this replica",
    registers: [svc.metrics],
  });
  return svc.every({
    name: "payout schedules",
    intervalMs: opts.scheduleIntervalMs,
    leader: true,
    wakeOnClock: true,
    run: async (_leader, signal) => {
      let counted: RunSummary = { runs: 0, paid: 0, skipped: 0 };
      const summary = await runDueSchedules(deps, {
        batchMax: opts.scheduleBatchMax,
        leaseMs: opts.scheduleLeaseMs,
        signal,
        onBatch: (s) => {
          outcomes.inc({ outcome: "paid" }, s.paid - counted.paid);
          outcomes.inc({ outcome: "skipped" }, s.skipped - counted.skipped);
          progress.set(s.runs);
          if (s.runs > counted.runs) svc.log.info(s, "payout schedules: batch done");
          counted = s;
        },
      });
      return summary;
    },
  });
}

export function registerJobs(svc: Pick<Service, "every" | "log" | "metrics">, deps: PayoutsDeps, opts: JobOptions): PayoutsJobs {
  const reconciler = svc.every({ name: "reconciler", intervalMs: opts.reconcileIntervalMs, run: reconcilePass(deps, opts) });
  const sealer = deps.sealer;
  const reseal = async (): Promise<number> =>
    sealer === undefined ? 0 : resealAll({ sealedValues: deps.sealedValues, sealer }, opts.keyIds, opts.resealBatchMax);
  // With one key nothing is retired: the pass would only ever find nothing, so it does not run on its own.
  svc.every({
    name: "bank details reseal",
    intervalMs: opts.keyIds.length > 1 ? opts.resealIntervalMs : 0,
    run: async () => {
      const moved = await reseal();
      if (moved > 0) svc.log.info({ resealed: moved }, "bank details re-sealed with the active key");
    },
  });
  return { reconciler, reseal, schedules: registerScheduleJob(svc, deps, opts) };
}
