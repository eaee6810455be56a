/**
 * The reconciler's pass (registered as the `reconciler` job in jobs/index.ts): re-drives intents stuck between
 * the ledger post and the settle step (a crash, a ledger timeout). Safe with any number of replicas and alongside
 * live requests: the ledger post is idempotent on the intent's reference and the settle step is conditional on
 * the intent's state.
 */
import { driveEach } from "@treasury/service-kit";
import type { Logger } from "pino";
import { driveCompletion } from "./complete-checkout.ts";
import type { PaymentsDeps } from "./deps.ts";
import { driveDispute } from "./disputes.ts";
import { driveTopup } from "./wallet-topup.ts";
import { driveStuckReversals } from "./shared-spend.ts";

export interface ReconcilerOptions {
  graceMs: number;
  batchMax: number;
}

/** One pass; answers how many intents it settled or failed. */
export async function reconcilePass(deps: PaymentsDeps, opts: ReconcilerOptions, log: Logger): Promise<number> {
  const { graceMs, batchMax } = opts;
  let n = await driveEach(log, { noun: "checkout", idField: "checkout_session_id" }, await deps.checkouts.stuckCompleting(graceMs, batchMax), (row) =>
    driveCompletion(deps, row),
  );
  n += await driveStuckReversals(deps, graceMs, batchMax, log);
  n += await driveEach(log, { noun: "wallet top-up", idField: "topup_id" }, await deps.topups.stuck(graceMs, batchMax), (row) => driveTopup(deps, row));
  n += await driveEach(log, { noun: "dispute", idField: "dispute_id" }, await deps.disputes.inFlight(graceMs, batchMax), (row) => driveDispute(deps, row));
  return n;
}
