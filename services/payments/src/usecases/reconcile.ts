/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives intents
 * stuck between the ledger post and the settle step (a crash, a ledger timeout). Safe with any number of
 * replicas and alongside live requests: the ledger post is idempotent on the intent's reference and the settle
 * step is conditional on the intent's state.
 */
import { driveEach, Reconciler } from "@treasury/service-kit";
import type { Logger } from "pino";
import { stuckCompleting } from "../store/checkouts.ts";
import { disputesInFlight } from "../store/disputes.ts";
import { stuckTopups } from "../store/wallet-topups.ts";
import { driveCompletion } from "./complete-checkout.ts";
import type { PaymentsDeps } from "./deps.ts";
import { driveDispute } from "./disputes.ts";
import { driveTopup } from "./wallet-topup.ts";
import { driveStuckReversals } from "./shared-spend.ts";

export interface ReconcilerOptions {
  intervalMs: number;
  graceMs: number;
  batchMax: number;
}

export function paymentsReconciler(deps: PaymentsDeps, opts: ReconcilerOptions, log: Logger): Reconciler {
  return new Reconciler({ intervalMs: opts.intervalMs, log, pass: () => pass(deps, opts, log) });
}

/** One pass; answers how many intents it settled or failed. */
async function pass(deps: PaymentsDeps, opts: ReconcilerOptions, log: Logger): Promise<number> {
  const { sql } = deps;
  const { graceMs, batchMax } = opts;
  let n = await driveEach(log, { noun: "checkout", idField: "checkout_session_id" }, await stuckCompleting(sql, graceMs, batchMax), (row) =>
    driveCompletion(deps, row),
  );
  n += await driveStuckReversals(deps, graceMs, batchMax, log);
  n += await driveEach(log, { noun: "wallet top-up", idField: "topup_id" }, await stuckTopups(sql, graceMs, batchMax), (row) => driveTopup(deps, row));
  n += await driveEach(log, { noun: "dispute", idField: "dispute_id" }, await disputesInFlight(sql, graceMs, batchMax), (row) => driveDispute(deps, row));
  return n;
}
