/**
 * The webhooks service: endpoint management (`POST /v1/webhooks {action}`), the sandbox test event, a durable
 * consumer that fans public events out into delivery rows, and the delivery workers that sign and send them
 * with retries on a schedule kept in PostgreSQL.
 */
import postgres from "postgres";
import { eventsSubjectFilter } from "@treasury/contracts";
import {
  ConfigError,
  Counter,
  createService,
  Gauge,
  Histogram,
  parseKeyRing,
  PeriodicTask,
  SealedValueError,
  Sealer,
  withTimeout,
  type KeyRing,
  type Service,
  type ServiceConfig,
  type ServiceDeps,
} from "@treasury/service-kit";
import { WebhooksEnv, type WebhooksConfig } from "./config.ts";
import { destroyAgents } from "./delivery/http.ts";
import { Dispatcher } from "./delivery/dispatcher.ts";
import { manageWebhooks, sandboxSendTestWebhook } from "./handlers/index.ts";
import { deliveryBacklog, purgeFinished } from "./store/deliveries.ts";
import { fanOut, type DropReason } from "./usecases/fanout.ts";
import { resealAll } from "./usecases/reseal.ts";

/** The durable consumer's name on the EVENTS stream (its inbox rows carry it too). */
export const FANOUT_DURABLE = "webhooks-fanout";
/** Connections of the delivery workers' own pool (one claim loop, one settle batch at a time, a spare). */
const DISPATCHER_POOL_MAX = 3;

/** The service's own metrics on its /metrics registry: attempts by outcome, the backlog and how late it is. */
function registerMetrics(svc: Service<ServiceConfig<typeof WebhooksEnv>>): (outcome: string, seconds: number) => void {
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
function droppedEventsCounter(svc: Service<ServiceConfig<typeof WebhooksEnv>>): (reason: DropReason) => void {
  const dropped = new Counter({
    name: "webhook_events_dropped_total",
    help: "Events not delivered because their subject, type and source do not match the event's owner (subject_mismatch, not_owner)",
    labelNames: ["reason"] as const,
    registers: [svc.metrics],
  });
  return (reason) => dropped.inc({ reason });
}

export interface WebhooksService extends Service<ServiceConfig<typeof WebhooksEnv>> {
  dispatcher: Dispatcher;
  webhooks: WebhooksConfig;
  /** One reseal pass now (it also runs on start and every WEBHOOK_RESEAL_INTERVAL_MS); answers how many endpoints moved. */
  reseal(): Promise<number>;
}

/** What a test (or host process) may supply instead of configuration. */
export interface WebhooksServiceDeps extends ServiceDeps {
  /** The key ring that seals signing secrets; otherwise WEBHOOK_SECRET_KEYS / WEBHOOK_SECRET_ACTIVE_KEY_ID. */
  keyRing?: KeyRing;
}

function keyRingOf(c: ServiceConfig<typeof WebhooksEnv>): KeyRing | undefined {
  if (c.WEBHOOK_SECRET_KEYS === undefined) return undefined;
  try {
    return parseKeyRing(c.WEBHOOK_SECRET_KEYS, c.WEBHOOK_SECRET_ACTIVE_KEY_ID);
  } catch (e) {
    // The ring's messages name entries and key ids, never key material.
    if (e instanceof SealedValueError) throw new ConfigError([`WEBHOOK_SECRET_KEYS: ${e.message}`]);
    throw e;
  }
}

function webhooksConfig(c: ServiceConfig<typeof WebhooksEnv>): WebhooksConfig {
  return {
    retryScheduleMs: c.WEBHOOK_RETRY_SCHEDULE_MS,
    timeoutMs: c.WEBHOOK_TIMEOUT_MS,
    pollIntervalMs: c.WEBHOOK_POLL_INTERVAL_MS,
    concurrencyMax: c.WEBHOOK_CONCURRENCY_MAX,
    endpointConcurrencyMax: c.WEBHOOK_ENDPOINT_CONCURRENCY_MAX,
    rotationOverlapMs: c.WEBHOOK_ROTATION_OVERLAP_MS,
    fanoutConsumers: c.WEBHOOK_FANOUT_CONSUMERS,
    retentionDays: c.WEBHOOK_RETENTION_DAYS,
    allowPrivateUrls: c.WEBHOOK_ALLOW_PRIVATE_URLS === "true",
  };
}

export async function buildWebhooks(env: Record<string, string | undefined>, deps: WebhooksServiceDeps = {}): Promise<WebhooksService> {
  const svc = await createService({ name: "webhooks", env, extraEnv: WebhooksEnv, deps });
  const config = webhooksConfig(svc.config);
  let ring: KeyRing | undefined;
  try {
    ring = deps.keyRing ?? keyRingOf(svc.config);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  const sealer = ring === undefined ? undefined : new Sealer(ring);
  const useCaseDeps = { sql: svc.sql, sealer, config, log: svc.log };
  svc.handle("manageWebhooks", manageWebhooks(useCaseDeps));
  svc.handle("sandboxSendTestWebhook", sandboxSendTestWebhook(useCaseDeps));

  // The workers' pool commits without waiting for the WAL flush; see store/deliveries.ts for why that is safe.
  const dispatcherSql = postgres(svc.config.DATABASE_URL, {
    max: DISPATCHER_POOL_MAX,
    connect_timeout: 10,
    idle_timeout: 60,
    connection: { application_name: "webhooks-dispatcher", synchronous_commit: "off" },
    onnotice: () => {},
  });
  const dispatcher = new Dispatcher({ sql: dispatcherSql, log: svc.log, config, sealer, onAttempt: registerMetrics(svc) });
  // Finished deliveries go with the kit's sweep of its outbox and inbox.
  svc.retention.add({ name: "webhooks.deliveries", days: config.retentionDays, purge: (before, limit) => purgeFinished(svc.sql, before, limit) });
  const maxAttempts = config.retryScheduleMs.length;
  const dropped = droppedEventsCounter(svc);
  for (let i = 0; i < config.fanoutConsumers; i++) {
    svc.consume({
      durable: FANOUT_DURABLE,
      filterSubject: eventsSubjectFilter(svc.prefix),
      handler: async (evt, tx, { subject }) =>
        void (await fanOut(tx, evt, { subject, prefix: svc.prefix, log: svc.log, dropped }, maxAttempts, () => dispatcher.hint())),
    });
  }
  if (sealer === undefined) {
    // Without keys no secret can be stored or opened: the service says so and is not ready; fan-out still records
    // deliveries, which wait in the database for a configured replica's workers.
    svc.log.warn("WEBHOOK_SECRET_KEYS is not set: endpoints cannot be created or rotated and nothing is delivered until keys are configured");
    svc.readyChecks.push(async () => {
      throw new Error("WEBHOOK_SECRET_KEYS is not configured");
    });
  }
  svc.readyChecks.push(async () => {
    if (!dispatcher.isRunning()) throw new Error("delivery workers not running");
  });
  const keyIds = ring === undefined ? [] : [...ring.keys.keys()];
  const reseal = async (): Promise<number> =>
    sealer === undefined ? 0 : resealAll({ sql: svc.sql, sealer, log: svc.log, now: () => new Date() }, keyIds, svc.config.WEBHOOK_RESEAL_BATCH_MAX);
  const resealTask = new PeriodicTask({
    name: "webhook secrets reseal",
    intervalMs: svc.config.WEBHOOK_RESEAL_INTERVAL_MS,
    log: svc.log,
    run: () => resealPass(svc, reseal),
  });
  // Shutdown hooks run after the consumers stop; attempts in flight get a moment to record their outcome.
  svc.onShutdown(async () => {
    await resealTask.stop();
    await dispatcher.stop();
    destroyAgents();
    await dispatcherSql.end({ timeout: 5 });
  });
  // The kit has no start hook: the workers start once everything else listens.
  const kitStart = svc.start.bind(svc);
  svc.start = async () => {
    const started = await kitStart();
    if (sealer === undefined) return started;
    // Clear secrets left by the release before sealing are sealed before the first delivery; a failed pass is
    // logged and tried again by the periodic one (deliveries can still sign from rows not yet sealed).
    await resealPass(svc, reseal).catch((err: unknown) => svc.log.error({ err }, "webhook secrets reseal pass failed"));
    await dispatcher.start();
    if (svc.config.WEBHOOK_RESEAL_INTERVAL_MS > 0) resealTask.start();
    return started;
  };
  return Object.assign(svc, { dispatcher, webhooks: config, reseal });
}

async function resealPass(svc: Service, reseal: () => Promise<number>): Promise<void> {
  const moved = await reseal();
  if (moved > 0) svc.log.info({ resealed: moved }, "webhook signing secrets sealed with the active key");
}
