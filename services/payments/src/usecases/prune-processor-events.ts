/**
 * Retention of received processor events: a finished event's row exists to answer a redelivery with "already
 * recorded", and the processor redelivers (or an operator resends from its dashboard) events up to 30 days old.
 * Rows finished longer ago than the retention period are deleted in small batches, so the table holds about one
 * retention period of events instead of growing for ever. Pending events are never deleted: money may be behind
 * them. A resend after the period would be recorded and worked again, which moves nothing: every action on an
 * event is idempotent (usecases/processor-events.ts).
 */
import type { PaymentsDeps } from "./deps.ts";

const DAY_MS = 86_400_000;
/** Rows per delete statement: short statements, so the pass never holds many row locks at once. */
const BATCH = 1_000;

/** Deletes every finished event older than `retentionDays`; answers how many. */
export async function pruneProcessorEvents(deps: Pick<PaymentsDeps, "processorEvents" | "now">, retentionDays: number): Promise<number> {
  const before = new Date(deps.now().getTime() - retentionDays * DAY_MS);
  let total = 0;
  for (;;) {
    const n = await deps.processorEvents.deleteFinished(before, BATCH);
    total += n;
    if (n < BATCH) return total;
  }
}
