/**
 * The service's periodic work, each a `svc.every` job started once the service is ready and stopped on shutdown:
 * the reconciler (usecases/reconcile.ts: intents and transitions left in flight, undelivered files, scheduled
 * cuts) and, while the key ring holds retired keys, the reseal pass (usecases/reseal.ts).
 */
import type { Job, Service } from "@treasury/service-kit";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { reconcilePass, type ReconcilerOptions } from "../usecases/reconcile.ts";
import { resealAll } from "../usecases/reseal.ts";

export interface PayoutsJobs {
  reconciler: Job<number>;
  /** One reseal pass now; answers how many values moved. */
  reseal(): Promise<number>;
}

export interface JobOptions extends ReconcilerOptions {
  reconcileIntervalMs: number;
  resealIntervalMs: number;
  resealBatchMax: number;
  /** The ids of the key ring's keys (none without keys). */
  keyIds: readonly string[];
}

export function registerJobs(svc: Pick<Service, "every" | "log">, deps: PayoutsDeps, opts: JobOptions): PayoutsJobs {
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
  return { reconciler, reseal };
}
