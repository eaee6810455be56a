/**
 * The reconciler: an interval loop, started with the service and stopped on shutdown, that re-drives refunds
 * stuck between the intent and the settle step (a crash, a ledger timeout). Safe with any number of replicas and
 * alongside live requests: the ledger post is idempotent on the intent's reference and the settle step is
 * conditional on the refund being pending.
 */
import { DomainError } from "@treasury/contracts";
import { PeriodicTask } from "@treasury/service-kit";
import type { Logger } from "pino";
import { stuckPending } from "../store/refunds.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";

export interface ReconcilerOptions {
  intervalMs: number;
  graceMs: number;
  batchMax: number;
}

export class Reconciler {
  private readonly loop: PeriodicTask;

  constructor(
    private readonly deps: RefundsDeps,
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

  /** One pass; answers how many refunds it settled (completed or failed). Tests call it directly. */
  async runOnce(): Promise<number> {
    let n = 0;
    for (const row of await stuckPending(this.deps.sql, this.opts.graceMs, this.opts.batchMax)) {
      try {
        const done = await executeRefund(this.deps, row);
        this.log.info({ refund_id: row.id, status: done.status }, "reconciler settled a refund");
        n++;
      } catch (err) {
        if (err instanceof DomainError && err.code !== "service_timeout") {
          this.log.info({ refund_id: row.id, error_code: err.code }, "reconciler found a refund the ledger refused");
          n++;
          continue;
        }
        this.log.warn({ err, refund_id: row.id }, "reconciler could not settle a refund yet");
      }
    }
    return n;
  }
}
