/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives payouts
 * stuck between a ledger post and the step after it (a crash, a ledger timeout): intents still `posting`,
 * settle and return actions in flight, and ACH files recorded but not delivered. With a cut interval it also
 * cuts ACH files on schedule. Safe with any number of replicas and alongside live requests: every ledger post
 * is idempotent on its reference, every settle step is conditional on the row's state, and cuts are
 * serialised by an advisory lock.
 */
import { PeriodicTask } from "@treasury/service-kit";
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
    let n = 0;
    for (const row of await stuckPosting(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      try {
        const done = await drivePayout(this.deps, row);
        this.log.info({ payout_id: row.id, status: done.status }, "reconciler settled a payout intent");
        n++;
      } catch (err) {
        this.log.warn({ err, payout_id: row.id }, "reconciler could not settle a payout intent yet");
      }
    }
    for (const row of await stuckActions(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      try {
        const done = await driveAction(this.deps, row);
        this.log.info({ payout_id: row.id, status: done.status }, "reconciler finished a payout's settlement or return");
        n++;
      } catch (err) {
        this.log.warn({ err, payout_id: row.id }, "reconciler could not finish a payout's settlement or return yet");
      }
    }
    n += await deliverPending(this.deps);
    if (this.deps.rail !== undefined && this.opts.cutIntervalMs > 0 && Date.now() - this.lastCutAt >= this.opts.cutIntervalMs) {
      this.lastCutAt = Date.now();
      n += (await cutFile(this.deps)).payout_ids.length;
    }
    return n;
  }
}
