/**
 * The service's repeated work, both leader jobs (one replica at a time): the reconciler, which drives ledger
 * intents left pending, and the overdue pass, woken at once when an org's sandbox clock moves.
 */
import type { Job, Service } from "@treasury/service-kit";
import { reconcilePostings } from "../usecases/drive.ts";
import { markOverdue } from "../usecases/overdue.ts";
import type { InvoicingDeps } from "../usecases/ports.ts";

export interface JobOptions {
  reconcileIntervalMs: number;
  reconcileGraceMs: number;
  overdueIntervalMs: number;
  batchMax: number;
}

export function registerJobs(svc: Pick<Service, "every" | "log">, deps: InvoicingDeps, opts: JobOptions): { reconcile: Job<number>; overdue: Job<number> } {
  const reconcile = svc.every({
    name: "invoice-postings-reconciler",
    intervalMs: opts.reconcileIntervalMs,
    leader: true,
    run: async (_leader, signal) => {
      const settled = await reconcilePostings(deps, { graceMs: opts.reconcileGraceMs, batchMax: opts.batchMax, signal });
      if (settled > 0) svc.log.info({ settled }, "invoice postings settled by the reconciler");
      return settled;
    },
  });
  const overdue = svc.every({
    name: "invoice-overdue",
    intervalMs: opts.overdueIntervalMs,
    leader: true,
    wakeOnClock: true,
    run: async () => markOverdue(deps, opts.batchMax),
  });
  return { reconcile, overdue };
}
