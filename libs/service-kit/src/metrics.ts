import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PoolUsage } from "./db.ts";

/** A scrape must answer even when a dependency hangs; a slow probe reports nothing for that round. */
const PROBE_TIMEOUT_MS = 2000;

export type RpcOutcome = "ok" | "domain_error" | "internal_error" | "rejected";

export interface ServiceMetrics {
  registry: Registry;
  rpcDuration: Histogram<"operation" | "outcome">;
  errorsTotal: Counter<"code">;
  outboxLag: Gauge;
  /** Events the outbox relay has published (counted once the broker stored them and the rows are marked). */
  outboxPublished: Counter;
  consumerPending: Gauge<"durable">;
  /** Events a durable consumer received again (the broker's delivery count above 1). */
  consumerRedeliveries: Counter<"durable">;
}

export interface MetricProbes {
  /** Age of the oldest unpublished outbox row, when the service runs a relay. */
  outboxLagSeconds?: () => Promise<number>;
  /** Messages not yet acknowledged, per durable consumer. */
  consumerPending?: () => Array<{ durable: string; pending: () => Promise<number> }>;
  /** The service's pool, counted by trackPool (db.ts). */
  pool?: PoolUsage;
}

/** A metric probe's answer, or a rejection after `ms` (a scrape must not hang on a dependency). */
export function withTimeout<T>(p: Promise<T>, ms = PROBE_TIMEOUT_MS): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error("metric probe timed out")), ms).unref())]);
}

/** One registry per service, so several services in one process (tests) never share series. */
export function createMetrics(service: string, probes: MetricProbes = {}): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  // The process's own: CPU, memory, heap, event-loop delay (max and percentiles since the last scrape), GC time by kind.
  collectDefaultMetrics({ register: registry });
  const rpcDuration = new Histogram({
    name: "rpc_duration_seconds",
    help: "Time to answer an RPC, by operation and outcome",
    labelNames: ["operation", "outcome"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const errorsTotal = new Counter({
    name: "errors_total",
    help: "Errors answered or raised, by error code",
    labelNames: ["code"] as const,
    registers: [registry],
  });
  const outboxLag = new Gauge({
    name: "outbox_lag_seconds",
    help: "Age of the oldest outbox event not yet published",
    registers: [registry],
    async collect() {
      if (!probes.outboxLagSeconds) return;
      this.set(await withTimeout(probes.outboxLagSeconds()).catch(() => Number.NaN));
    },
  });
  const consumerPending = new Gauge({
    name: "consumer_pending",
    help: "Events not yet acknowledged by a durable consumer",
    labelNames: ["durable"] as const,
    registers: [registry],
    async collect() {
      for (const c of probes.consumerPending?.() ?? []) {
        this.set({ durable: c.durable }, await withTimeout(c.pending()).catch(() => Number.NaN));
      }
    },
  });
  const outboxPublished = new Counter({
    name: "outbox_events_published_total",
    help: "Outbox events this process's relay published to the EVENTS stream",
    registers: [registry],
  });
  const consumerRedeliveries = new Counter({
    name: "consumer_redeliveries_total",
    help: "Events a durable consumer received more than once (a failed handler, a lost ack, a process that died)",
    labelNames: ["durable"] as const,
    registers: [registry],
  });
  if (probes.pool !== undefined) registerPoolMetrics(registry, probes.pool);
  return { registry, rpcDuration, errorsTotal, outboxLag, outboxPublished, consumerPending, consumerRedeliveries };
}

/**
 * The pool's gauges say what trackPool counts: connections held by transactions and reservations, and callers
 * waiting for one. Statements sent outside a transaction share connections and appear in neither.
 */
function registerPoolMetrics(registry: Registry, pool: PoolUsage): void {
  new Gauge({
    name: "db_pool_connections_max",
    help: "Size of the service's PostgreSQL pool (DB_POOL_MAX)",
    registers: [registry],
    collect() {
      this.set(pool.max);
    },
  });
  new Gauge({
    name: "db_pool_connections_held",
    help: "Pool connections held by a transaction or a reserved session right now (single statements are not counted)",
    registers: [registry],
    collect() {
      this.set(pool.held);
    },
  });
  new Gauge({
    name: "db_pool_acquire_waiting",
    help: "Transactions and reservations waiting for a pool connection right now",
    registers: [registry],
    collect() {
      this.set(pool.waiting);
    },
  });
  const acquire = new Histogram({
    name: "db_pool_acquire_seconds",
    help: "Time from asking for a transaction or reservation to holding its connection (BEGIN included)",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  pool.acquired.add((seconds) => acquire.observe(seconds));
}
