/**
 * The reconciler's pass (registered with `svc.every` in jobs/index.ts): re-drives payouts stuck between a ledger
 * post and the step after it (a crash, a ledger timeout): intents still `posting`, settle and return actions in
 * flight, and ACH files recorded but not delivered. With a cut interval it also cuts ACH files on schedule. Safe
 * with any number of replicas and alongside live requests: every ledger post is idempotent on its reference,
 * every settle step is conditional on the row's state, and cuts are serialised by an advisory lock.
 */
import { driveEach } from "@treasury/service-kit";
import { cutFile, deliverPending } from "./cut-file.ts";
import type { PayoutsDeps } from "./deps.ts";
import { drivePayout } from "./request-payout.ts";
import { driveAction } from "./transitions.ts";

export interface ReconcilerOptions {
  graceMs: number;
  batchMax: number;
  /** 0: files are cut only on demand. */
  cutIntervalMs: number;
}

/** The pass: answers how many payouts it moved on. Cuts are timed from when the pass was made. */
export function reconcilePass(deps: PayoutsDeps, opts: ReconcilerOptions): () => Promise<number> {
  let lastCutAt = Date.now();
  const { log } = deps;
  return async () => {
    const { graceMs, batchMax } = opts;
    let n = await driveEach(log, { noun: "payout intent", idField: "payout_id" }, await deps.payouts.stuckPosting(graceMs, batchMax), (row) =>
      drivePayout(deps, row),
    );
    n += await driveEach(log, { noun: "payout's settlement or return", idField: "payout_id" }, await deps.payouts.stuckActions(graceMs, batchMax), (row) =>
      driveAction(deps, row),
    );
    n += await deliverPending(deps);
    if (deps.rail !== undefined && opts.cutIntervalMs > 0 && Date.now() - lastCutAt >= opts.cutIntervalMs) {
      lastCutAt = Date.now();
      n += (await cutFile(deps)).payout_ids.length;
    }
    return n;
  };
}
