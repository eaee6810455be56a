/**
 * The reseal pass: endpoints whose signing secrets are still clear (written before secrets were sealed, or by a
 * replica of that release during an upgrade) are sealed and their clear columns emptied; endpoints sealed with a
 * key that is still in the ring but no longer active are sealed again with the active key. A batch per
 * transaction; once no row names a retired key, that key can leave the ring. Rows whose key is not in the ring
 * are not selected (they cannot be opened until it returns). A previous secret whose overlap has ended is
 * dropped rather than sealed again: it signs nothing any more.
 */
import type { Sealer } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { WebhooksStore } from "./ports.ts";
import { openSecrets, sealSecrets } from "./secrets.ts";

export interface ResealDeps {
  store: Pick<WebhooksStore, "transaction">;
  sealer: Sealer;
  log: Logger;
  now: () => Date;
}

/** Seals or re-seals up to `batchMax` endpoints; answers how many moved to the active key. */
export async function resealBatch(deps: ResealDeps, keyIds: readonly string[], batchMax: number): Promise<number> {
  const { sealer } = deps;
  const retired = keyIds.filter((k) => k !== sealer.activeKeyId);
  return deps.store.transaction(async (tx) => {
    const rows = await tx.lockUnsealed(retired, batchMax);
    const now = deps.now();
    let moved = 0;
    for (const row of rows) {
      let opened: ReturnType<typeof openSecrets>;
      try {
        opened = openSecrets(sealer, row);
      } catch (err) {
        // One row the ring cannot open (its key was removed too early) must not stop the others; the message names the key id only.
        deps.log.error({ endpoint_id: row.id, error: (err as Error).message }, "webhook secret could not be opened for resealing");
        continue;
      }
      const { current, previous } = opened;
      const live = row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now ? previous : null;
      await tx.storeSealed(row.id, sealSecrets(sealer, row.id, current, live));
      moved += 1;
    }
    return moved;
  });
}

/** Runs batches until one comes back short; answers how many endpoints moved in all. */
export async function resealAll(deps: ResealDeps, keyIds: readonly string[], batchMax: number): Promise<number> {
  let moved = 0;
  for (;;) {
    const n = await resealBatch(deps, keyIds, batchMax);
    moved += n;
    if (n < batchMax) return moved;
  }
}
