/** The webhooks service's own metrics, beside the kit's on its /metrics registry. */
import { Counter, Gauge, Histogram, withTimeout, type Service } from "@treasury/service-kit";
import { deliveryBacklog } from "./store/deliveries.ts";
import type { DropReason } from "./usecases/fanout.ts";

/** The service's own metrics on its /metrics registry: attempts by outcome, the backlog and how late it is. */
export function registerMetrics(svc: Pick<Service, "metrics" | "sql">): (outcome: string, seconds: number) => void {
  const attempts = new Histogram({
    name: "webhook_attempt_duration_seconds",
    help: "Delivery attempts by outcome (delivered, retrying, failed) and how long each HTTP attempt took",
    labelNames: ["outcome"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [svc.metrics],
  });
  let backlog: Promise<{ pending: number; retrying: number; lagSeconds: number } | undefined> | undefined;
  // One query per scrape serves both gauges.
  const readBacklog = () => {
    backlog ??= withTimeout(deliveryBacklog(svc.sql))
      .catch(() => undefined)
      .finally(() => setImmediate(() => (backlog = undefined)));
    return backlog;
  };
  new Gauge({
    name: "webhook_deliveries_waiting",
    help: "Deliveries not finished yet, by status (pending: no attempt yet; retrying: waiting for the next attempt)",
    labelNames: ["status"] as const,
    registers: [svc.metrics],
    async collect() {
      const b = await readBacklog();
      this.set({ status: "pending" }, b?.pending ?? Number.NaN);
      this.set({ status: "retrying" }, b?.retrying ?? Number.NaN);
    },
  });
  new Gauge({
    name: "webhook_delivery_lag_seconds",
    help: "How long the oldest due delivery has been waiting for its attempt (0 when none is due)",
    registers: [svc.metrics],
    async collect() {
      this.set((await readBacklog())?.lagSeconds ?? Number.NaN);
    },
  });
  const children = new Map<string, { observe(v: number): void }>();
  return (outcome, seconds) => {
    let child = children.get(outcome);
    if (child === undefined) {
      child = attempts.labels({ outcome });
      children.set(outcome, child);
    }
    child.observe(seconds);
  };
}

/** Events the fan-out dropped because their owner did not emit them (usecases/fanout.ts), by reason. */
export function droppedEventsCounter(svc: Pick<Service, "metrics">): (reason: DropReason) => void {
  const dropped = new Counter({
    name: "webhook_events_dropped_total",
    help: "Events not delivered because their subject, type and source do not match the event's owner (subject_mismatch, not_owner)",
    labelNames: ["reason"] as const,
    registers: [svc.metrics],
  });
  return (reason) => dropped.inc({ reason });
}
