/**
 * The reconciler's pass (registered with svc.every by service.ts, so it runs while the service runs): re-drives
 * refunds stuck between the intent and the settle step (a crash, a ledger timeout). Safe with any number of
 * replicas and alongside live requests: the ledger post is idempotent on the intent's reference and the settle
 * step is conditional on the refund being pending.
 */
import { DomainError } from "@treasury/contracts";
import { driveEach } from "@treasury/service-kit";
import type { RefundRow } from "../domain/records.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";

export interface ReconcileOptions {
  /** A pending refund younger than this is left to the request that is still driving it. */
  graceMs: number;
  batchMax: number;
}

/** One pass; answers how many refunds it settled (completed or failed). */
export async function reconcilePass(deps: RefundsDeps, opts: ReconcileOptions): Promise<number> {
  const stuck = await deps.store.stuckPending(opts.graceMs, opts.batchMax);
  return driveEach(deps.log, { noun: "refund", idField: "refund_id" }, stuck, (row) => settleOrRecordRefusal(deps, row));
}

/**
 * Settles a pending refund. An answer that is a refusal rather than a timeout counts as driven: executeRefund has
 * recorded a definitive one on the refund as failed; any other stays pending for the next pass.
 */
async function settleOrRecordRefusal(deps: RefundsDeps, row: RefundRow): Promise<{ status: string }> {
  try {
    return await executeRefund(deps, row);
  } catch (err) {
    if (err instanceof DomainError && err.code !== "service_timeout") return { status: `refused (${err.code})` };
    throw err;
  }
}
