/**
 * Re-sealing personal data after a key rotation (usecases/reseal.ts) as the service runs it: with retired keys
 * in the ring, every KYC_RESEAL_INTERVAL_MS, the rows they sealed move to the active key, a batch per transaction
 * until none is left. Never with a single key (nothing can be stale), and KYC_RESEAL_INTERVAL_MS=0 turns the loop
 * off (a pass can still be run: `reseal()` on the built service). Not a leader job: every replica may run it,
 * since each batch locks its rows with SKIP LOCKED and replicas never wait on or repeat each other's rows.
 */
import type { Job, Service, ServiceConfig } from "@treasury/service-kit";
import type { KycEnv } from "../config.ts";
import type { KycDeps } from "../usecases/ports.ts";
import { resealBatch } from "../usecases/reseal.ts";

type Svc = Pick<Service<ServiceConfig<typeof KycEnv>>, "every" | "log" | "config">;

export function registerReseal(svc: Svc, deps: Pick<KycDeps, "store" | "sealer">, keyIds: readonly string[]): Job<number> {
  const { KYC_RESEAL_BATCH_MAX: batchMax, KYC_RESEAL_INTERVAL_MS: intervalMs } = svc.config;
  /** Every stale row, a batch at a time; answers how many moved. */
  const resealAll = async (): Promise<number> => {
    const sealer = deps.sealer;
    if (sealer === undefined) return 0;
    let moved = 0;
    for (;;) {
      const n = await resealBatch({ store: deps.store, sealer }, keyIds, batchMax);
      moved += n;
      if (n < batchMax) return moved;
    }
  };
  return svc.every({
    name: "pii reseal",
    intervalMs: keyIds.length > 1 ? intervalMs : 0,
    run: async () => {
      const n = await resealAll();
      if (n > 0) svc.log.info({ resealed: n }, "personal data re-sealed with the active key");
      return n;
    },
  });
}
