/**
 * The ledger's invariants (the checks of `ledger verify`) run every LEDGER_VERIFY_INTERVAL_MS, their result on
 * /metrics for the alerts in k8s/monitoring. One replica runs them: the one whose own session holds an advisory
 * lock (it keeps it while its session lasts; the others try again at each interval and take over when it ends).
 * Each run reads one read-only snapshot on that session, never a pool connection, every statement bounded by
 * LEDGER_VERIFY_TIMEOUT_MS, the whole run too.
 */
import type { Logger } from "pino";
import { z } from "zod";
import { Counter, Gauge, sessionClient, type Service, type Sql } from "@treasury/service-kit";
import { checkInvariants, type InvariantReport } from "./invariants.ts";

export const VerifyEnv = {
  /** How often the invariants are checked; 0 turns the check off. */
  LEDGER_VERIFY_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  /** Longest a run may take; past it the run is abandoned and counted as failed. */
  LEDGER_VERIFY_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(120_000),
};

const LOCK_KEY = "ledger.verify";
/** Violations written to the log line of a failed check; the metric counts them all. */
const LOGGED_VIOLATIONS_MAX = 20;

export type VerifyOutcome = "ok" | "violations" | "failed" | "not_leader";

type Registry = Service["metrics"];

interface VerifyMetrics {
  violations: Gauge<"invariant">;
  lastSuccess: Gauge;
  duration: Gauge;
  leader: Gauge;
  runs: Counter<"outcome">;
}

function registerMetrics(registry: Registry): VerifyMetrics {
  return {
    violations: new Gauge({
      name: "ledger_invariant_violations",
      help: "Rows breaking each ledger invariant at the last completed check on this replica (no series: none found)",
      labelNames: ["invariant"] as const,
      registers: [registry],
    }),
    lastSuccess: new Gauge({
      name: "ledger_verify_last_success_timestamp_seconds",
      help: "When this replica last completed an invariant check (0: never; another replica may hold the check's lock)",
      registers: [registry],
    }),
    duration: new Gauge({
      name: "ledger_verify_duration_seconds",
      help: "How long this replica's last invariant check took",
      registers: [registry],
    }),
    leader: new Gauge({
      name: "ledger_verify_leader",
      help: "1 on the replica that holds the invariant check's lock and runs it",
      registers: [registry],
    }),
    runs: new Counter({
      name: "ledger_verify_runs_total",
      help: "Invariant checks run by this replica, by outcome (ok, violations, failed)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
  };
}

export interface VerifyJobOptions {
  intervalMs: number;
  timeoutMs: number;
}

export class VerifyJob {
  private readonly metrics: VerifyMetrics;
  private db: Sql | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<VerifyOutcome> | undefined;
  private stopped = true;

  constructor(
    private readonly pool: Sql,
    registry: Registry,
    private readonly log: Logger,
    private readonly opts: VerifyJobOptions,
  ) {
    this.metrics = registerMetrics(registry);
  }

  start(): void {
    if (!this.stopped || this.opts.intervalMs === 0) return;
    this.stopped = false;
    this.schedule();
  }

  /** Ends the session, abandoning a run in progress (a shutdown does not wait for a long check); the lock goes with it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.endSession();
    await this.running;
  }

  /** One check now, if this replica holds (or can take) the lock. */
  runOnce(): Promise<VerifyOutcome> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.runOnce().finally(() => this.schedule());
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  private async run(): Promise<VerifyOutcome> {
    const started = performance.now();
    try {
      const report = await this.withDeadline(async (db) => {
        if (!(await this.holdsLock(db))) return undefined;
        return db.begin("read only isolation level repeatable read", async (tx) => {
          await tx`select set_config('statement_timeout', ${String(this.opts.timeoutMs)}, true)`;
          return checkInvariants(tx);
        });
      });
      if (report === undefined) return this.notLeader();
      return this.record(report, (performance.now() - started) / 1000);
    } catch (err) {
      if (this.stopped) return "failed";
      this.log.error({ err }, "ledger invariant check failed to run; it runs again at the next interval");
      this.metrics.runs.inc({ outcome: "failed" });
      return "failed";
    }
  }

  /** Runs `fn` on the job's session; past the timeout the session is ended, which abandons the run. */
  private async withDeadline<T>(fn: (db: Sql) => Promise<T>): Promise<T> {
    const db = this.session();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`ledger invariant check took longer than ${this.opts.timeoutMs} ms`));
        void this.endSession();
      }, this.opts.timeoutMs);
    });
    try {
      return await Promise.race([fn(db), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** True when this session holds the lock already or takes it now (never twice: CASE evaluates in order). */
  private async holdsLock(db: Sql): Promise<boolean> {
    const [row] = await db<{ leader: boolean }[]>`
      select case when exists (
          select 1 from pg_locks, (select hashtext(${LOCK_KEY})::bigint as k) key
          where locktype = 'advisory' and pid = pg_backend_pid() and granted and objsubid = 1
            and classid::bigint = (key.k >> 32) & 4294967295 and objid::bigint = key.k & 4294967295)
        then true else pg_try_advisory_lock(hashtext(${LOCK_KEY})) end as leader`;
    return row?.leader === true;
  }

  private notLeader(): VerifyOutcome {
    this.metrics.leader.set(0);
    // Only the replica that checks reports violations; a former leader's findings are not repeated here.
    this.metrics.violations.reset();
    return "not_leader";
  }

  private record(report: InvariantReport, seconds: number): VerifyOutcome {
    const counts = new Map<string, number>();
    for (const v of report.violations) counts.set(v.invariant, (counts.get(v.invariant) ?? 0) + 1);
    this.metrics.leader.set(1);
    this.metrics.violations.reset();
    for (const [invariant, n] of counts) this.metrics.violations.set({ invariant }, n);
    this.metrics.lastSuccess.set(Date.now() / 1000);
    this.metrics.duration.set(seconds);
    const outcome = report.ok ? "ok" : "violations";
    this.metrics.runs.inc({ outcome });
    if (!report.ok) {
      this.log.error({ violations: report.violations.slice(0, LOGGED_VIOLATIONS_MAX), violations_total: report.violations.length }, "ledger invariants broken");
    }
    return outcome;
  }

  private session(): Sql {
    this.db ??= sessionClient(this.pool, { application_name: "ledger verify" });
    return this.db;
  }

  private async endSession(): Promise<void> {
    const db = this.db;
    this.db = undefined;
    this.metrics.leader.set(0);
    await db?.end({ timeout: 1 });
  }
}

/** Runs the check on `svc` from its start to its shutdown. */
export function registerVerifyJob(svc: Service<{ LEDGER_VERIFY_INTERVAL_MS: number; LEDGER_VERIFY_TIMEOUT_MS: number }>): VerifyJob {
  const job = new VerifyJob(svc.sql, svc.metrics, svc.log, {
    intervalMs: svc.config.LEDGER_VERIFY_INTERVAL_MS,
    timeoutMs: svc.config.LEDGER_VERIFY_TIMEOUT_MS,
  });
  // The kit has no start hook: the timer starts once the service listens.
  const kitStart = svc.start.bind(svc);
  svc.start = async () => {
    const started = await kitStart();
    job.start();
    return started;
  };
  svc.onShutdown(() => job.stop());
  return job;
}
