import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** A scrape must answer even when a dependency hangs; a slow probe reports nothing for that round. */
const PROBE_TIMEOUT_MS = 2000;

export type RpcOutcome = "ok" | "domain_error" | "internal_error" | "rejected";

export interface ServiceMetrics {
  registry: Registry;
  rpcDuration: Histogram<"operation" | "outcome">;
  errorsTotal: Counter<"code">;
  outboxLag: Gauge;
  consumerPending: Gauge<"durable">;
}

export interface MetricProbes {
  /** Age of the oldest unpublished outbox row, when the service runs a relay. */
  outboxLagSeconds?: () => Promise<number>;
  /** Messages not yet acknowledged, per durable consumer. */
  consumerPending?: () => Array<{ durable: string; pending: () => Promise<number> }>;
}

/** A metric probe's answer, or a rejection after `ms` (a scrape must not hang on a dependency). */
export function withTimeout<T>(p: Promise<T>, ms = PROBE_TIMEOUT_MS): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error("metric probe timed out")), ms).unref()),
  ]);
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
  return { registry, rpcDuration, errorsTotal, outboxLag, consumerPending };
}
