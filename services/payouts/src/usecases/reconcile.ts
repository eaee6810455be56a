/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives payouts
 * stuck between a ledger post and the step after it (a crash, a ledger timeout): intents still `posting`,
 * settle and return actions in flight, and ACH files recorded but not delivered. With a cut interval it also
 * cuts ACH files on schedule. Safe with any number of replicas and alongside live requests: every ledger post
 * is idempotent on its reference, every settle step is conditional on the row's state, and cuts are
 * serialised by an advisory lock.
 */
import { driveEach, Reconciler } from "@treasury/service-kit";
import type { Logger } from "pino";
import { stuckActions, stuckPosting } from "../store/payouts.ts";
import { cutFile, deliverPending } from "./cut-file.ts";
import type { PayoutsDeps } from "./deps.ts";
import { drivePayout } from "./request-payout.ts";
import { driveAction } from "./transitions.ts";

export interface ReconcilerOptions {
  intervalMs: number;
  graceMs: number;
  batchMax: number;
  /** 0: files are cut only on demand. */
  cutIntervalMs: number;
}

export function payoutsReconciler(deps: PayoutsDeps, opts: ReconcilerOptions, log: Logger): Reconciler {
  let lastCutAt = Date.now();
  // Answers how many payouts it moved on.
  const pass = async (): Promise<number> => {
    const { sql } = deps;
    const { graceMs, batchMax } = opts;
    let n = await driveEach(log, { noun: "payout intent", idField: "payout_id" }, await stuckPosting(sql, graceMs, batchMax), (row) => drivePayout(deps, row));
    n += await driveEach(log, { noun: "payout's settlement or return", idField: "payout_id" }, await stuckActions(sql, graceMs, batchMax), (row) =>
      driveAction(deps, row),
    );
    n += await deliverPending(deps);
    if (deps.rail !== undefined && opts.cutIntervalMs > 0 && Date.now() - lastCutAt >= opts.cutIntervalMs) {
      lastCutAt = Date.now();
      n += (await cutFile(deps)).payout_ids.length;
    }
    return n;
  };
  return new Reconciler({ intervalMs: opts.intervalMs, log, pass });
}
