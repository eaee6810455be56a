/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives intents
 * stuck between the ledger post and the settle step (a crash, a ledger timeout). Safe with any number of
 * replicas and alongside live requests: the ledger post is idempotent on the intent's reference and the settle
 * step is conditional on the intent's state.
 */
import { driveEach, PeriodicTask } from "@treasury/service-kit";
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

export class Reconciler {
  private readonly loop: PeriodicTask;

  constructor(
    private readonly deps: PaymentsDeps,
    private readonly opts: ReconcilerOptions,
    private readonly log: Logger,
  ) {
    this.loop = new PeriodicTask({ name: "reconciler", intervalMs: this.opts.intervalMs, log: this.log, run: () => this.runOnce() });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass; answers how many intents it settled or failed. Tests call it directly. */
  async runOnce(): Promise<number> {
    const { sql } = this.deps;
    const { graceMs, batchMax } = this.opts;
    let n = await driveEach(this.log, { noun: "checkout", idField: "checkout_session_id" }, await stuckCompleting(sql, graceMs, batchMax), (row) =>
      driveCompletion(this.deps, row),
    );
    n += await driveStuckReversals(this.deps, graceMs, batchMax, this.log);
    n += await driveEach(this.log, { noun: "wallet top-up", idField: "topup_id" }, await stuckTopups(sql, graceMs, batchMax), (row) =>
      driveTopup(this.deps, row),
    );
    n += await driveEach(this.log, { noun: "dispute", idField: "dispute_id" }, await disputesInFlight(sql, graceMs, batchMax), (row) =>
      driveDispute(this.deps, row),
    );
    return n;
  }
}
