/**
 * The work payments repeats while it runs, each a job of the kit (`svc.every`): the reconciler, the
 * processor-event worker, the processor-session checks and the processor-event pruner.
 */
import type { Job, Service } from "@treasury/service-kit";
import type { PaymentsConfig } from "../config.ts";
import type { PaymentsMetrics } from "../metrics.ts";
import { checkProcessorSessions } from "../usecases/check-processor-sessions.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { pruneProcessorEvents } from "../usecases/prune-processor-events.ts";
import { reconcilePass } from "../usecases/reconcile.ts";
import { processorWorkerJob, type ProcessorWorker } from "./processor-worker.ts";

export type PaymentsSvc = Service<PaymentsConfig>;

export interface PaymentsJobs {
  /** Re-drives intents stuck between the ledger post and the settle step. */
  reconciler: Job<number>;
  processorWorker: ProcessorWorker;
}

export function registerJobs(svc: PaymentsSvc, deps: PaymentsDeps, metrics: PaymentsMetrics): PaymentsJobs {
  const cfg = svc.config;
  const reconciler = svc.every({
    name: "reconciler",
    intervalMs: cfg.PAYMENTS_RECONCILE_INTERVAL_MS,
    run: () => reconcilePass(deps, { graceMs: cfg.PAYMENTS_RECONCILE_GRACE_MS, batchMax: cfg.PAYMENTS_RECONCILE_BATCH_MAX }, svc.log),
  });
  // Its own loop: its calls to the processor never hold up the reconciler's passes over money in flight.
  svc.every({
    name: "processor session checks",
    intervalMs: cfg.PAYMENTS_RECONCILE_INTERVAL_MS,
    run: async () => metrics.processorChecksFound(await checkProcessorSessions(deps, cfg.PAYMENTS_RECONCILE_BATCH_MAX)),
  });
  svc.every({
    name: "processor-event pruner",
    intervalMs: cfg.PAYMENTS_PROCESSOR_PRUNE_INTERVAL_MS,
    run: async () => {
      const deleted = await pruneProcessorEvents(deps, cfg.PAYMENTS_PROCESSOR_EVENT_RETENTION_DAYS);
      if (deleted > 0) svc.log.info({ deleted }, "finished processor events past their retention deleted");
    },
  });
  return { reconciler, processorWorker: processorWorkerJob(svc, deps) };
}
