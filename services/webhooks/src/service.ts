/**
 * The webhooks service: endpoint management (`POST /v1/webhooks {action}`), the sandbox test event, a durable
 * consumer that fans public events out into delivery rows, and the delivery workers that sign and send them
 * with retries on a schedule kept in PostgreSQL; and the operator's replay and `find` answers.
 */
import postgres from "postgres";
import { eventsSubjectFilter } from "@treasury/contracts";
import {
  ConfigError,
  createService,
  type EventConsumer,
  parseKeyRing,
  SealedValueError,
  Sealer,
  type KeyRing,
  type Service,
  type ServiceConfig,
  type ServiceDeps,
} from "@treasury/service-kit";
import { WebhooksEnv, type WebhooksConfig } from "./config.ts";
import { destroyAgents, nodeWebhookHttp } from "./adapters/http.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { registerAdminFind } from "./admin/find.ts";
import { Dispatcher } from "./jobs/dispatcher.ts";
import { registerHandlers } from "./handlers/index.ts";
import { droppedEventsCounter, registerMetrics } from "./metrics.ts";
import { purgeFinished } from "./store/deliveries.ts";
import { pgSigningKeyStore } from "./store/signing-keys.ts";
import { pgFanOutStore, pgWebhooksStore } from "./store/webhooks-store.ts";
import { fanOut } from "./usecases/fanout.ts";
import type { SigningKeyStore, WebhooksStore } from "./usecases/ports.ts";
import { resealAll } from "./usecases/reseal.ts";
import { ensureActiveKey, resealSigningKeys, SigningKeys } from "./usecases/signing-keys.ts";

/** The durable consumer's name on the EVENTS stream (its inbox rows carry it too). */
export const FANOUT_DURABLE = "webhooks-fanout";
/** Connections of the delivery workers' own pool (one claim loop, one settle batch at a time, a spare). */
const DISPATCHER_POOL_MAX = 3;

type KitService = Service<ServiceConfig<typeof WebhooksEnv>>;

export interface WebhooksService extends KitService {
  dispatcher: Dispatcher;
  webhooks: WebhooksConfig;
  /** One reseal pass now (it also runs on start and every WEBHOOK_RESEAL_INTERVAL_MS); answers how many endpoints and keys moved. */
  reseal(): Promise<number>;
  /** The platform's Ed25519 signing keys (the JWKS and `ed25519` endpoints' signatures). */
  signingKeys: SigningKeys;
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

/** The ring from deps or configuration; a bad one releases what the service opened before it is reported. */
async function keyRingOrStop(svc: KitService, deps: WebhooksServiceDeps): Promise<KeyRing | undefined> {
  try {
    return deps.keyRing ?? keyRingOf(svc.config);
  } catch (e) {
    await svc.stop();
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
    signingKeyOverlapMs: c.WEBHOOK_SIGNING_KEY_OVERLAP_MS,
    fanoutConsumers: c.WEBHOOK_FANOUT_CONSUMERS,
    retentionDays: c.WEBHOOK_RETENTION_DAYS,
    allowPrivateUrls: c.WEBHOOK_ALLOW_PRIVATE_URLS === "true",
  };
}

/** The delivery workers on their own pool, stopped (and the pool closed) on shutdown. */
function deliveryWorkers(
  svc: KitService,
  config: WebhooksConfig,
  sealer: Sealer | undefined,
  signingKeys: SigningKeys,
  fannedOutThrough: () => Promise<number>,
): Dispatcher {
  // The workers' pool commits without waiting for the WAL flush; see store/deliveries.ts for why that is safe.
  const dispatcherSql = postgres(svc.config.DATABASE_URL, {
    max: DISPATCHER_POOL_MAX,
    connect_timeout: 10,
    idle_timeout: 60,
    connection: { application_name: "webhooks-dispatcher", synchronous_commit: "off" },
    onnotice: () => {},
  });
  const dispatcher = new Dispatcher({ sql: dispatcherSql, log: svc.log, config, sealer, signingKeys, fannedOutThrough, onAttempt: registerMetrics(svc) });
  // Shutdown hooks run after the consumers and jobs stop; attempts in flight get a moment to record their outcome.
  svc.onShutdown(async () => {
    await dispatcher.stop();
    destroyAgents();
    await dispatcherSql.end({ timeout: 5 });
  });
  return dispatcher;
}

/**
 * The fan-out: several pullers on one durable, each writing an event's delivery rows in its consumer transaction.
 * Answers the durable's ack floor (any puller's view of it is the durable's).
 */
function consumeEvents(svc: KitService, config: WebhooksConfig, dispatcher: Dispatcher): () => Promise<number> {
  const maxAttempts = config.retryScheduleMs.length;
  const dropped = droppedEventsCounter(svc);
  const consumers: EventConsumer[] = [];
  for (let i = 0; i < config.fanoutConsumers; i++) {
    const consumer = svc.consume({
      durable: FANOUT_DURABLE,
      filterSubject: eventsSubjectFilter(svc.prefix),
      handler: async (evt, tx, { subject, streamSeq }) =>
        void (await fanOut(pgFanOutStore(tx), evt, { subject, streamSeq, prefix: svc.prefix, log: svc.log, dropped }, maxAttempts, (ordered) =>
          dispatcher.hint(ordered),
        )),
    });
    consumers.push(consumer);
  }
  const [first] = consumers;
  return () => first?.ackFloor() ?? Promise.resolve(0);
}

function addReadyChecks(svc: KitService, sealer: Sealer | undefined, dispatcher: Dispatcher): void {
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
}

/**
 * The reseal pass: on start (before the workers), then every WEBHOOK_RESEAL_INTERVAL_MS (0: on start only). It
 * moves endpoint secrets and the platform's signing keys to the ring's active key, and expires signing keys whose
 * overlap has ended.
 */
function resealSecrets(
  svc: KitService,
  store: WebhooksStore,
  keys: SigningKeyStore,
  ring: KeyRing | undefined,
  sealer: Sealer | undefined,
): () => Promise<number> {
  const keyIds = ring === undefined ? [] : [...ring.keys.keys()];
  const batchMax = svc.config.WEBHOOK_RESEAL_BATCH_MAX;
  const reseal = async (): Promise<number> => {
    if (sealer === undefined) return 0;
    const endpoints = await resealAll({ store, sealer, log: svc.log, now: () => new Date() }, keyIds, batchMax);
    const expired = await keys.expire();
    if (expired.length > 0) svc.log.info({ kids: expired }, "webhook signing keys past their overlap left the key set");
    return endpoints + (await resealSigningKeys(keys, sealer, keyIds, batchMax, svc.log));
  };
  const pass = async (): Promise<void> => {
    const moved = await reseal();
    if (moved > 0) svc.log.info({ resealed: moved }, "webhook signing secrets sealed with the active key");
  };
  if (sealer !== undefined) svc.every({ name: "webhook secrets reseal", intervalMs: svc.config.WEBHOOK_RESEAL_INTERVAL_MS, run: pass });
  // Clear secrets left by the release before sealing are sealed before the first delivery; a failed pass is
  // logged and tried again by the periodic one (deliveries can still sign from rows not yet sealed).
  svc.onStart(async () => {
    if (sealer === undefined) return;
    await pass().catch((err: unknown) => svc.log.error({ err }, "webhook secrets reseal pass failed"));
  });
  return reseal;
}

export async function buildWebhooks(env: Record<string, string | undefined>, deps: WebhooksServiceDeps = {}): Promise<WebhooksService> {
  const svc = await createService({ name: "webhooks", env, extraEnv: WebhooksEnv, deps });
  const config = webhooksConfig(svc.config);
  const ring = await keyRingOrStop(svc, deps);
  const sealer = ring === undefined ? undefined : new Sealer(ring);
  const store = pgWebhooksStore(svc.sql);
  const keyStore = pgSigningKeyStore(svc.sql);
  const signingKeys = new SigningKeys(keyStore, sealer, svc.log);
  registerHandlers(svc, { store, http: nodeWebhookHttp, sealer, signingKeys, config, log: svc.log, now: () => new Date() });
  registerAdminCommands(svc, { sealer, signingKeys, overlapMs: config.signingKeyOverlapMs });
  registerAdminFind(svc, svc.sql);
  // The workers ask the fan-out's consumers for their ack floor; the consumers hint the workers.
  let fannedOutThrough = async (): Promise<number> => 0;
  const dispatcher = deliveryWorkers(svc, config, sealer, signingKeys, () => fannedOutThrough());
  fannedOutThrough = consumeEvents(svc, config, dispatcher);
  // Finished deliveries go with the kit's sweep of its outbox and inbox.
  svc.retention.add({ name: "webhooks.deliveries", days: config.retentionDays, purge: (before, limit) => purgeFinished(svc.sql, before, limit) });
  addReadyChecks(svc, sealer, dispatcher);
  const reseal = resealSecrets(svc, store, keyStore, ring, sealer);
  // The first signing key exists before any delivery or JWKS asks for it; the workers start once the start pass
  // has sealed what it could; without keys neither happens.
  svc.onStart(async () => {
    if (sealer === undefined) return;
    await ensureActiveKey(keyStore, sealer);
    await dispatcher.start();
  });
  return Object.assign(svc, { dispatcher, webhooks: config, reseal, signingKeys });
}
