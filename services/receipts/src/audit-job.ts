/**
 * The full audit of the receipt chains (usecases/audit-chains.ts) as the service runs it: every
 * RECEIPTS_CHAIN_AUDIT_INTERVAL_MS on every replica (a chain another replica audited within half an interval is
 * skipped), stopped on shutdown between chains. Its findings reach /metrics for the alert in k8s/monitoring:
 * `receipt_chains_broken` counts the chains whose stored audit found problems, the same on every replica, read
 * at start and after each pass.
 */
import { Gauge, PeriodicTask, type Service } from "@treasury/service-kit";
import type { Logger } from "pino";
import { countBrokenChains } from "./store/checkpoints.ts";
import { auditChains } from "./usecases/audit-chains.ts";
import type { ReceiptsDeps } from "./usecases/deps.ts";

export class ChainAuditJob {
  private readonly task: PeriodicTask;
  private readonly broken: Gauge;
  private readonly lastPass: Gauge;
  private stopping = false;

  constructor(
    private readonly deps: ReceiptsDeps,
    registry: Service["metrics"],
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.broken = new Gauge({
      name: "receipt_chains_broken",
      help: "Receipt proof chains whose last full audit found problems (stored, so every replica reports the same)",
      registers: [registry],
    });
    this.lastPass = new Gauge({
      name: "receipt_chain_audit_last_pass_timestamp_seconds",
      help: "When this replica last completed a pass of the full chain audit (0: not yet)",
      registers: [registry],
    });
    this.task = new PeriodicTask({
      name: "receipt chain audit",
      intervalMs,
      log,
      run: () => this.runOnce({ skipAuditedWithinMs: intervalMs / 2 }),
    });
  }

  /** One pass, then the metrics. Tests call it directly. */
  async runOnce(opts: { skipAuditedWithinMs?: number } = {}): Promise<void> {
    await auditChains(this.deps, this.log, { ...opts, stopping: () => this.stopping });
    this.lastPass.set(Date.now() / 1000);
    await this.refresh();
  }

  async start(): Promise<void> {
    await this.refresh();
    this.task.start();
  }

  stop(): Promise<void> {
    this.stopping = true;
    return this.task.stop();
  }

  private async refresh(): Promise<void> {
    this.broken.set(await countBrokenChains(this.deps.sql));
  }
}
