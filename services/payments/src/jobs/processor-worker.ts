/**
 * The processor-event worker's loop: a pass every PAYMENTS_PROCESSOR_POLL_MS finds events recorded by other
 * replicas, events whose retry is due and events whose lease ran out; a received event wakes it at once (or right
 * after the pass in progress), so an event is worked on as soon as its webhook is answered.
 */
import type { Job } from "@treasury/service-kit";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { describe, workDueProcessorEvents } from "../usecases/processor-worker.ts";
import type { PaymentsSvc } from "./index.ts";

export interface ProcessorWorker {
  job: Job<number>;
  /** Runs a pass now, or right after the one running: an event was just recorded. */
  wake(): void;
}

export function processorWorkerJob(svc: PaymentsSvc, deps: PaymentsDeps): ProcessorWorker {
  const cfg = svc.config;
  const opts = { leaseMs: cfg.PAYMENTS_PROCESSOR_LEASE_MS, batchMax: cfg.PAYMENTS_PROCESSOR_BATCH_MAX };
  // Set by wake(); a pass goes round again while it is set, so an event recorded during a pass is not left to the next poll.
  let again = false;
  let running = false;
  const job = svc.every({
    name: "processor-event worker",
    intervalMs: cfg.PAYMENTS_PROCESSOR_POLL_MS,
    run: async () => {
      let done = 0;
      do {
        again = false;
        done += await workDueProcessorEvents(deps, opts, svc.log);
      } while (again && running);
      return done;
    },
  });
  const wake = (): void => {
    if (!running) return;
    again = true;
    job.runOnce().then(
      // Joined a pass that had already made its last round: one more.
      () => (again && running ? wake() : undefined),
      (err: unknown) => svc.log.error({ error: describe(err) }, "processor event pass failed"),
    );
  };
  svc.onStart(() => {
    running = true;
    wake();
  });
  svc.onShutdown(async () => {
    running = false;
  });
  return { job, wake };
}
