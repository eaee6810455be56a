/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives payouts
 * stuck between a ledger post and the step after it (a crash, a ledger timeout): intents still `posting`,
 * settle and return actions in flight, and ACH files recorded but not delivered. With a cut interval it also
 * cuts ACH files on schedule. Safe with any number of replicas and alongside live requests: every ledger post
 * is idempotent on its reference, every settle step is conditional on the row's state, and cuts are
 * serialised by an advisory lock.
 */
import { driveEach, PeriodicTask } from "@treasury/service-kit";
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

export class Reconciler {
  private readonly loop: PeriodicTask;
  private lastCutAt = Date.now();

  constructor(
    private readonly deps: PayoutsDeps,
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

  /** One pass; answers how many payouts it moved on. Tests call it directly. */
  async runOnce(): Promise<number> {
    const { sql } = this.deps;
    const { graceMs, batchMax } = this.opts;
    let n = await driveEach(this.log, { noun: "payout intent", idField: "payout_id" }, await stuckPosting(sql, graceMs, batchMax), (row) =>
      drivePayout(this.deps, row),
    );
    n += await driveEach(this.log, { noun: "payout's settlement or return", idField: "payout_id" }, await stuckActions(sql, graceMs, batchMax), (row) =>
      driveAction(this.deps, row),
    );
    n += await deliverPending(this.deps);
    if (this.deps.rail !== undefined && this.opts.cutIntervalMs > 0 && Date.now() - this.lastCutAt >= this.opts.cutIntervalMs) {
      this.lastCutAt = Date.now();
      n += (await cutFile(this.deps)).payout_ids.length;
    }
    return n;
  }
}
