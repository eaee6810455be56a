/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives intents
 * stuck between the ledger post and the settle step (a crash, a ledger timeout). Safe with any number of
 * replicas and alongside live requests: the ledger post is idempotent on the intent's reference and the settle
 * step is conditional on the intent's state.
 */
import { PeriodicTask } from "@treasury/service-kit";
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
    let n = 0;
    for (const row of await stuckCompleting(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      try {
        const done = await driveCompletion(this.deps, row);
        this.log.info({ checkout_session_id: row.id, status: done.status }, "reconciler settled a checkout");
        n++;
      } catch (err) {
        this.log.warn({ err, checkout_session_id: row.id }, "reconciler could not settle a checkout yet");
      }
    }
    n += await driveStuckReversals(this.deps, this.opts.graceMs, this.opts.batchMax, this.log);
    for (const row of await stuckTopups(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      n += await this.attempt("wallet top-up", row.id, () => driveTopup(this.deps, row));
    }
    for (const row of await disputesInFlight(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      n += await this.attempt("dispute", row.id, () => driveDispute(this.deps, row));
    }
    return n;
  }

  /** Drives one intent; a failure is logged and left for the next pass. Answers 1 when it was driven. */
  private async attempt(what: string, id: string, drive: () => Promise<{ status: string }>): Promise<number> {
    try {
      const done = await drive();
      this.log.info({ id, status: done.status }, `reconciler drove a ${what}`);
      return 1;
    } catch (err) {
      this.log.warn({ id, error: err instanceof Error ? err.message : String(err) }, `reconciler could not drive a ${what} yet`);
      return 0;
    }
  }
}
