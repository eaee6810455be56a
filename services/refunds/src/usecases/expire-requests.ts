/**
 * Refund request expiry: a request still `created` when its expires_at passes on its own clock (live: real time;
 * sandbox: the org's test clock) is cancelled by the service, `cancelled_by: "schedule"` with cancellation_reason
 * `expired`, and emits `refund_request.cancelled` like a client's cancel. No money moves: an unreviewed request
 * has no refund.
 *
 * Two ways reach it, and a request expires once whichever runs first:
 * - the expiry pass (jobs/expiry.ts, a leader job woken when a sandbox clock moves) expires what is due across
 *   every org in statements of up to `batchMax` requests, each with its events in one transaction;
 * - a move (approve, reject, cancel) that finds the request it locked past its deadline expires it in its own
 *   transaction, and the move is then refused as illegal (409 invalid_state_transition, state `cancelled`), so the
 *   answer never depends on how recently the pass ran.
 * Both move a request only while it is `created` (the pass skips rows a move holds locked), so an approval racing
 * the expiry leaves one outcome.
 *
 * Errors: none of its own; a store failure ends the pass (the next one retries what is still due).
 */
import type { Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import { presentRefundRequest } from "../domain/present.ts";
import type { RefundRequestRow } from "../domain/records.ts";
import { expiryFields } from "../domain/refund-request.ts";
import type { RefundsDeps } from "./deps.ts";
import type { ClockReading, RefundsTx } from "./ports.ts";

/** Statements one pass runs at most; what is still due then waits for the next pass (the job's interval). */
export const EXPIRY_BATCHES_PER_PASS_MAX = 50;

/** The clocks a pass reads: real time and every advanced sandbox (the kit's Clock). */
export interface ExpiryClock {
  realNow(): Date;
  advanced(): ReadonlyMap<string, number>;
}

function cancelledEvent(row: RefundRequestRow): NewEvent {
  return { org_id: row.org_id, livemode: row.livemode, type: "refund_request.cancelled", data: presentRefundRequest(row) };
}

/** One pass: expires every request due now, batch by batch; answers how many it expired. */
export async function expireDueRequests(
  deps: Pick<RefundsDeps, "store">,
  clock: ExpiryClock,
  opts: { batchMax: number; signal?: AbortSignal },
): Promise<number> {
  let expired = 0;
  for (let batch = 0; batch < EXPIRY_BATCHES_PER_PASS_MAX && opts.signal?.aborted !== true; batch++) {
    const now: ClockReading = { realNow: clock.realNow(), advanced: clock.advanced() };
    const moved = await deps.store.transaction(async (tx) => {
      const rows = await tx.expireDueRequests(now, opts.batchMax);
      await tx.emitMany(rows.map(cancelledEvent));
      return rows.length;
    });
    expired += moved;
    // Fewer than a full batch: nothing else was due (or the rest is locked by moves that will decide it).
    if (moved < opts.batchMax) break;
  }
  return expired;
}

/** Expires `row` (locked by the caller's transaction, found due) at its org's now, with its event; answers it moved. */
export async function expireLocked(deps: Pick<RefundsDeps, "clock">, tx: RefundsTx, tenant: Tenant, row: RefundRequestRow): Promise<RefundRequestRow> {
  const at = deps.clock(tenant);
  const moved = await tx.moveRefundRequest(row.id, "created", expiryFields(at), at);
  if (moved === undefined) throw new Error(`refund request ${row.id} did not expire under its lock`);
  await tx.emit(cancelledEvent(moved));
  return moved;
}
