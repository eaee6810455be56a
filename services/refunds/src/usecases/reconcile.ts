/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives refunds
 * stuck between the intent and the settle step (a crash, a ledger timeout). Safe with any number of replicas and
 * alongside live requests: the ledger post is idempotent on the intent's reference and the settle step is
 * conditional on the refund being pending.
 */
import { DomainError } from "@treasury/contracts";
import { driveEach, Reconciler } from "@treasury/service-kit";
import type { Logger } from "pino";
import { stuckPending, type RefundRow } from "../store/refunds.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";

export interface ReconcilerOptions {
  intervalMs: number;
  graceMs: number;
  batchMax: number;
}

export function refundsReconciler(deps: RefundsDeps, opts: ReconcilerOptions, log: Logger): Reconciler {
  return new Reconciler({
    intervalMs: opts.intervalMs,
    log,
    // Answers how many refunds it settled (completed or failed).
    pass: async () =>
      driveEach(log, { noun: "refund", idField: "refund_id" }, await stuckPending(deps.sql, opts.graceMs, opts.batchMax), (row) =>
        settleOrRecordRefusal(deps, row),
      ),
  });
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
