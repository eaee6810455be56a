/**
 * The ledger's invariants (the checks of `ledger verify`, verify/invariants.ts) run every
 * LEDGER_VERIFY_INTERVAL_MS, their result on /metrics for the alerts in k8s/monitoring. One replica runs them: a
 * leader job of the kit (`svc.every({ leader: true })`), whose own PostgreSQL session holds the job's advisory lock
 * (`ledger.verify`) while it lasts; the others try again at each interval and take over when it ends. Each run
 * reads one read-only snapshot on that session, never a pool connection, every statement bounded by
 * LEDGER_VERIFY_TIMEOUT_MS, the whole run too: past it the run ends its session (and with it the lock) and counts
 * as failed.
 */
import { Counter, Gauge, type Job, type LeaderSession, type Service } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { LedgerConfig } from "../config.ts";
import { checkInvariants, type InvariantReport } from "../verify/invariants.ts";

/** Violations written to the log line of a failed check; the metric counts them all. */
const LOGGED_VIOLATIONS_MAX = 20;

export type VerifyOutcome = "ok" | "violations" | "failed";

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

/** Runs the check on `svc` from its start to its shutdown; `runOnce()` answers undefined on a replica that is not the leader. */
export function registerVerifyJob(svc: Service<Pick<LedgerConfig, "LEDGER_VERIFY_INTERVAL_MS" | "LEDGER_VERIFY_TIMEOUT_MS">>): Job<VerifyOutcome> {
  const metrics = registerMetrics(svc.metrics);
  const timeoutMs = svc.config.LEDGER_VERIFY_TIMEOUT_MS;
  // The kit ends the job's session once the job has stopped; this replica then no longer checks.
  svc.onShutdown(async () => metrics.leader.set(0));
  return svc.every({
    name: "verify",
    leader: true,
    intervalMs: svc.config.LEDGER_VERIFY_INTERVAL_MS,
    onNotLeader: () => notLeader(metrics),
    run: (leader, signal) => verifyPass(leader, { metrics, log: svc.log, timeoutMs, signal }),
  });
}

/** Another replica holds the lock: only the replica that checks reports violations (a former leader's are dropped). */
function notLeader(metrics: VerifyMetrics): void {
  metrics.leader.set(0);
  metrics.violations.reset();
}

/** One check on the leader's session, within the deadline; a failure is counted and logged, never thrown. */
async function verifyPass(
  leader: LeaderSession | undefined,
  ctx: { metrics: VerifyMetrics; log: Logger; timeoutMs: number; signal: AbortSignal },
): Promise<VerifyOutcome> {
  if (leader === undefined) throw new Error("the verify job runs only as a leader job");
  const started = performance.now();
  try {
    const report = await withDeadline(leader, ctx, () =>
      leader.session.begin("read only isolation level repeatable read", async (tx) => {
        await tx`select set_config('statement_timeout', ${String(ctx.timeoutMs)}, true)`;
        return checkInvariants(tx);
      }),
    );
    return record(ctx, report, (performance.now() - started) / 1000);
  } catch (err) {
    // A shutdown abandons the check (its session ends): nothing failed, the next leader checks again.
    if (ctx.signal.aborted) return "failed";
    ctx.log.error({ err }, "ledger invariant check failed to run; it runs again at the next interval");
    ctx.metrics.runs.inc({ outcome: "failed" });
    return "failed";
  }
}

/**
 * Runs `fn`; past the timeout, or when the service stops, the leader resigns (its session ends, which abandons the
 * run) and the run fails.
 */
async function withDeadline<T>(
  leader: LeaderSession,
  ctx: { metrics: VerifyMetrics; timeoutMs: number; signal: AbortSignal },
  fn: () => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: () => void = () => {};
  const deadline = new Promise<never>((_, reject) => {
    const abandon = (why: string): void => {
      reject(new Error(why));
      ctx.metrics.leader.set(0);
      void leader.resign();
    };
    timer = setTimeout(() => abandon(`ledger invariant check took longer than ${ctx.timeoutMs} ms`), ctx.timeoutMs);
    onAbort = () => abandon("the service is stopping");
    ctx.signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([fn(), deadline]);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener("abort", onAbort);
  }
}

function record(ctx: { metrics: VerifyMetrics; log: Logger }, report: InvariantReport, seconds: number): VerifyOutcome {
  const { metrics } = ctx;
  const counts = new Map<string, number>();
  for (const v of report.violations) counts.set(v.invariant, (counts.get(v.invariant) ?? 0) + 1);
  metrics.leader.set(1);
  metrics.violations.reset();
  for (const [invariant, n] of counts) metrics.violations.set({ invariant }, n);
  metrics.lastSuccess.set(Date.now() / 1000);
  metrics.duration.set(seconds);
  const outcome = report.ok ? "ok" : "violations";
  metrics.runs.inc({ outcome });
  if (!report.ok) {
    ctx.log.error({ violations: report.violations.slice(0, LOGGED_VIOLATIONS_MAX), violations_total: report.violations.length }, "ledger invariants broken");
  }
  return outcome;
}
