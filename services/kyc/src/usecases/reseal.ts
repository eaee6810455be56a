/**
 * Key rotation of sealed personal data: rows sealed with a key that is still in the ring but no longer active
 * are opened and sealed again with the active key, a batch per transaction. Once none remain the old key can
 * leave the ring. Rows whose key is not in the ring are left alone (and cannot be read until it returns).
 */
import type { Sealer } from "@treasury/service-kit";
import { piiContext } from "./deps.ts";
import type { KycDeps } from "./ports.ts";

/** Re-seals up to `batchMax` rows; returns how many moved to the active key. */
export async function resealBatch(deps: Pick<KycDeps, "store"> & { sealer: Sealer }, keyIds: readonly string[], batchMax: number): Promise<number> {
  const sealer = deps.sealer;
  const retired = keyIds.filter((k) => k !== sealer.activeKeyId);
  if (retired.length === 0) return 0;
  return deps.store.transaction(async (tx) => {
    const rows = await tx.lockStaleSealed(retired, batchMax);
    for (const row of rows) {
      const context = piiContext(row.id);
      await tx.updateSealed(row.id, sealer.seal(sealer.open(row.pii, context), context), sealer.activeKeyId);
    }
    return rows.length;
  });
}
