import type { NatsConnection } from "@nats-io/transport-node";
import {
  ADMIN_FANOUT_OPERATIONS,
  adminOperation,
  AuditListRequest,
  DomainError,
  EVENT_OWNERS,
  eventsStreamName,
  eventSubject,
  SANDBOX_CLOCK_ADVANCED,
  SandboxClockAdvanced,
  FindEventsRequest,
  FindRowsRequest,
  internalOperation,
  internalOperationsOf,
  PAGE_ROUTES,
  PageRequest,
  parseOrThrow,
  routesOf,
} from "@treasury/contracts";
import type { AdminCommandOf, RpcReply, ServiceName } from "@treasury/contracts";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { z } from "zod";
import { runAdmin, type AdminCommand } from "./admin.ts";
import { advanceSandboxClock, SandboxClock, type Clock } from "./clock.ts";
import { findEvents, listAuditLog, type AdminFinder, type AuditSource } from "./admin-reads.ts";
import { BaseEnv, loadConfig } from "./config.ts";
import type { BaseConfig } from "./config.ts";
import { EventConsumer } from "./consumer.ts";
import { installCrashHandlers } from "./crash.ts";
import { Job, type JobSpec } from "./jobs.ts";
import { kitPurgeTasks, RetentionSweeper, SWEEP_INTERVAL_MS_DEFAULT } from "./retention.ts";
import type { EventHandler } from "./consumer.ts";
import { createDb, trackPool } from "./db.ts";
import type { Sql } from "./db.ts";
import { probe, startHealthServer } from "./health.ts";
import type { Readiness } from "./health.ts";
import { createLogger } from "./logger.ts";
import { createMetrics } from "./metrics.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { registerNatsMetrics } from "./nats-metrics.ts";
import { awaitEventsStream, connectNats, natsConnectOptions } from "./nats.ts";
import { OutboxRelay } from "./outbox.ts";
import { RpcServer } from "./rpc-server.ts";
import type { RpcHandler } from "./rpc-server.ts";
import { errorReply } from "./rpc-wire.ts";
import { initTelemetry } from "./telemetry.ts";

/** Connections and logger a test (or a host process) supplies; the service then leaves closing them to it. */
export interface ServiceDeps {
  sql?: Sql;
  nc?: NatsConnection;
  log?: Logger;
}

/** What an internal or page handler is given beside its input. */
export interface InternalCtx {
  log: Logger;
  requestId: string;
}

/** No extra keys: the default for services that need only BaseEnv. */
export type NoExtraEnv = Record<never, never>;

export type ServiceConfig<E extends z.ZodRawShape = NoExtraEnv> = BaseConfig & z.infer<z.ZodObject<E>>;

export interface ConsumeOptions {
  durable: string;
  filterSubject: string;
  handler: EventHandler;
  maxAckPending?: number;
  /** See EventConsumerOptions.ackWaitMs (default 10 s). */
  ackWaitMs?: number;
}

export interface Service<C = BaseConfig> {
  name: string;
  config: C;
  log: Logger;
  sql: Sql;
  nc: NatsConnection;
  prefix: string;
  rpc: RpcServer;
  metrics: Registry;
  /** The relay, when enabled (tests drive and inspect it). */
  relay: OutboxRelay | undefined;
  /** Deletes rows past their retention every 10 minutes: the outbox's published rows, inbox claims, and what the service adds. */
  retention: RetentionSweeper;
  /** An operation the gateway routes (and, when INTERNAL_CALLS names it, other services call): the one way to answer a request. */
  handle(operation: string, handler: RpcHandler): void;
  /**
   * An operation only other services call, whose payload is not a gateway request (`svc.ledger.post`, internal
   * reads): `decode` checks the payload (throwing validation_error), `handler` answers a 200 body.
   */
  handleInternal<T>(operation: string, decode: (payload: unknown) => T, handler: (input: T, ctx: InternalCtx) => Promise<Record<string, unknown>>): void;
  /**
   * An operator command this service owns (ADMIN_COMMANDS of @treasury/contracts), answered on
   * `svc.<service>.admin.<group>.<command>`, which only the operator CLI's identity may publish to; recorded in the
   * service's audit_log (admin.ts).
   */
  handleAdmin<T>(command: AdminCommandOf<ServiceName>, spec: AdminCommand<T>): void;
  /** The rows of this service an id of `admin find` leads to (admin-reads.ts); without one it answers none. */
  adminFind(finder: AdminFinder): void;
  /** A record of operator decisions the service keeps itself, answered with its audit_log to `audit list`. */
  adminAuditSource(source: AuditSource): void;
  /** A browser page the gateway's alt listener routes (PAGE_ROUTES): answers the page's reply (HTML or a redirect). */
  handlePage(operation: string, handler: (req: PageRequest, ctx: InternalCtx) => Promise<RpcReply>): void;
  consume(opts: ConsumeOptions): EventConsumer;
  /** Work repeated while the service runs (jobs.ts): started once the service is ready, stopped on shutdown. */
  every<T>(spec: JobSpec<T>): Job<T>;
  /** The time each tenant runs on (clock.ts): real time in live, the org's test clock in sandbox. */
  clock: Clock;
  /** Keeps this service's copy of the sandbox clocks in step with the ledger's advances (a durable consumer). */
  followSandboxClock(): void;
  /** Runs once the service answers requests, before it reports ready; a hook that throws fails start(). */
  onStart(fn: () => Promise<void> | void): void;
  onShutdown(fn: () => Promise<void>): void;
  /** Extra readiness checks: each resolves when the service can work, throws with the reason otherwise. */
  readyChecks: Array<() => Promise<void>>;
  start(): Promise<{ healthPort: number }>;
  stop(): Promise<void>;
  installSignalHandlers(): void;
}

export interface CreateServiceOptions<E extends z.ZodRawShape> {
  name: string;
  env: Record<string, string | undefined>;
  extraEnv?: E;
  deps?: ServiceDeps;
  /** Run the outbox relay in this process (default true). */
  relay?: boolean;
}

/**
 * Builds a service from its environment: config, logger, telemetry, pool, NATS, RPC server, outbox relay.
 * Nothing listens until start(); if start() fails the caller should still call stop() to release what opened.
 */
export async function createService<E extends z.ZodRawShape = NoExtraEnv>(opts: CreateServiceOptions<E>): Promise<Service<ServiceConfig<E>>> {
  const config = loadConfig(BaseEnv.extend(opts.extraEnv ?? ({} as E)), opts.env) as ServiceConfig<E>;
  const deps = opts.deps ?? {};
  const log = deps.log ?? createLogger({ service: opts.name, level: config.LOG_LEVEL });
  const telemetry = initTelemetry({ service: opts.name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const sql = deps.sql ?? createDb(config.DATABASE_URL, { max: config.DB_POOL_MAX, application_name: opts.name });
  const nc = deps.nc ?? (await connectNats(natsConnectOptions(config, opts.name)));
  return new KitService(opts.name, config, { log, sql, nc, telemetry, ownsSql: !deps.sql, ownsNc: !deps.nc }, opts.relay ?? true);
}

interface Resources {
  log: Logger;
  sql: Sql;
  nc: NatsConnection;
  telemetry: { shutdown(): Promise<void> };
  ownsSql: boolean;
  ownsNc: boolean;
}
/** Whether a service's outbox emits any event type (EVENT_OWNERS): only then does it publish to the EVENTS stream. */
function ownsEvents(service: string): boolean {
  return Object.values(EVENT_OWNERS).some((owner) => owner === service);
}

class KitService<C extends BaseConfig> implements Service<C> {
  readonly name: string;
  readonly config: C;
  readonly log: Logger;
  readonly sql: Sql;
  readonly nc: NatsConnection;
  readonly prefix: string;
  readonly rpc: RpcServer;
  readonly metrics: Registry;
  readonly relay: OutboxRelay | undefined;
  /** Deletes rows past their retention (the kit's outbox and inbox; a service adds its own tasks). */
  readonly retention: RetentionSweeper;
  readonly readyChecks: Array<() => Promise<void>> = [];
  private readonly internalOperations: ReadonlySet<string>;
  private readonly res: Resources;
  private readonly kitMetrics: ServiceMetrics;
  private readonly consumers: EventConsumer[] = [];
  private readonly shutdownHooks: Array<() => Promise<void>> = [];
  private readonly startHooks: Array<() => Promise<void> | void> = [];
  private readonly jobs: Job<unknown>[] = [];
  private readonly auditSources: AuditSource[] = [];
  readonly clock: SandboxClock;
  private finder: AdminFinder | undefined;
  private health: { port: number; close(): Promise<void> } | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;

  constructor(name: string, config: C, res: Resources, relay: boolean) {
    this.name = name;
    this.config = config;
    this.res = res;
    this.log = res.log;
    this.sql = res.sql;
    this.nc = res.nc;
    this.prefix = config.NATS_PREFIX;
    this.internalOperations = new Set(internalOperationsOf(name));
    const consumerPending = () => this.consumers.map((c) => ({ durable: c.durable, pending: () => c.pending() }));
    const outboxLagSeconds = () => this.relay?.lagSeconds() ?? Promise.resolve(0);
    const metrics = createMetrics(name, { consumerPending, pool: trackPool(this.sql), ...(relay ? { outboxLagSeconds } : {}) });
    registerNatsMetrics(metrics.registry, this.nc, { stream: eventsStreamName(this.prefix) });
    this.kitMetrics = metrics;
    this.metrics = metrics.registry;
    this.relay = relay
      ? new OutboxRelay({
          sql: this.sql,
          nc: this.nc,
          schema: name,
          prefix: this.prefix,
          source: name,
          log: this.log,
          coalesceMs: config.OUTBOX_COALESCE_MS,
          onPublished: (n) => metrics.outboxPublished.inc(n),
        })
      : undefined;
    this.retention = new RetentionSweeper(this.log);
    this.clock = new SandboxClock(this.sql, name, this.log);
    for (const task of kitPurgeTasks(this.sql, name, { outbox: config.OUTBOX_RETENTION_DAYS, inbox: config.INBOX_RETENTION_DAYS })) this.retention.add(task);
    this.every({ name: "retention", intervalMs: SWEEP_INTERVAL_MS_DEFAULT, run: () => this.retention.sweep() });
    this.rpc = new RpcServer({
      nc: this.nc,
      prefix: this.prefix,
      service: name,
      log: this.log,
      concurrencyMax: config.RPC_CONCURRENCY_MAX,
      tenantConcurrencyMax: config.RPC_TENANT_CONCURRENCY_MAX ?? Math.max(1, Math.floor(config.RPC_CONCURRENCY_MAX / 4)),
      metrics,
    });
  }

  /**
   * Registers an operation. When other services call it (INTERNAL_CALLS of @treasury/contracts), the same
   * handler also answers its internal subject, which only they may publish to: only the gateway may publish to
   * the public one (ADR 0011).
   */
  handle(operation: string, handler: RpcHandler): void {
    this.rpc.handle(operation, handler);
    if (this.internalOperations.has(operation)) this.rpc.handle(internalOperation(operation), handler);
  }

  handleInternal<T>(operation: string, decode: (payload: unknown) => T, handler: (input: T, ctx: InternalCtx) => Promise<Record<string, unknown>>): void {
    this.rpc.handleRaw(operation, async (payload, ctx) => ({ ok: true, status: 200, body: await handler(decode(payload), ctx) }));
  }

  handleAdmin<T>(command: AdminCommandOf<ServiceName>, spec: AdminCommand<T>): void {
    const deps = { sql: this.sql, schema: this.name, log: this.log };
    this.rpc.handleRaw(adminOperation(command), async (payload, ctx) => ({ ok: true, status: 200, body: await runAdmin(deps, command, spec, payload, ctx) }));
  }

  adminFind(finder: AdminFinder): void {
    this.finder = finder;
  }

  adminAuditSource(source: AuditSource): void {
    this.auditSources.push(source);
  }

  /** What every service answers to `audit list` and `find`, whatever it owns. */
  private answerAdminReads(): void {
    const ok = (body: object): RpcReply => ({ ok: true, status: 200, body: body as Record<string, unknown> });
    this.rpc.handleRaw(ADMIN_FANOUT_OPERATIONS.auditList, async (p) =>
      ok(await listAuditLog(this.sql, this.name, parseOrThrow(AuditListRequest, p), this.auditSources)),
    );
    this.rpc.handleRaw(ADMIN_FANOUT_OPERATIONS.findRows, async (p) => {
      const request = parseOrThrow(FindRowsRequest, p);
      return ok(this.finder?.rows === undefined ? { hits: [], nodes: [] } : await this.finder.rows(request));
    });
    this.rpc.handleRaw(ADMIN_FANOUT_OPERATIONS.findEvents, async (p) =>
      ok(await findEvents(this.sql, this.name, parseOrThrow(FindEventsRequest, p), this.finder)),
    );
  }

  handlePage(operation: string, handler: (req: PageRequest, ctx: InternalCtx) => Promise<RpcReply>): void {
    this.rpc.handleRaw(operation, (payload, ctx) => {
      const parsed = PageRequest.safeParse(payload);
      if (!parsed.success) throw new DomainError("validation_error", "Malformed page request");
      return handler(parsed.data, ctx);
    });
  }

  every<T>(spec: JobSpec<T>): Job<T> {
    const job = new Job(spec, this.log, this.sql, this.name);
    this.jobs.push(job as Job<unknown>);
    if (spec.wakeOnClock === true) this.clock.onAdvance(() => void job.runOnce().catch(() => undefined));
    if (this.started) job.start();
    return job;
  }

  followSandboxClock(): void {
    this.consume({
      durable: `${this.name}-sandbox-clock`,
      filterSubject: eventSubject(this.prefix, SANDBOX_CLOCK_ADVANCED),
      handler: async (evt, tx) => {
        const { org_id, advanced_by_seconds } = parseOrThrow(SandboxClockAdvanced, evt.data, "event");
        await advanceSandboxClock(tx, this.name, org_id, advanced_by_seconds);
      },
    });
  }

  onStart(fn: () => Promise<void> | void): void {
    if (this.started) throw new Error(`${this.name}: onStart() after start()`);
    this.startHooks.push(fn);
  }

  consume(opts: ConsumeOptions): EventConsumer {
    const redeliveries = this.kitMetrics.consumerRedeliveries.labels({ durable: opts.durable });
    const consumer = new EventConsumer({
      nc: this.nc,
      sql: this.sql,
      schema: this.name,
      prefix: this.prefix,
      log: this.log,
      onRedelivery: () => redeliveries.inc(),
      ...opts,
    });
    this.consumers.push(consumer);
    if (this.started) {
      consumer.start().catch((err: unknown) => this.log.error({ err, durable: opts.durable }, "event consumer failed to start"));
    }
    return consumer;
  }

  onShutdown(fn: () => Promise<void>): void {
    this.shutdownHooks.push(fn);
  }

  async start(): Promise<{ healthPort: number }> {
    if (this.started || this.stopping) throw new Error(`${this.name}: start() called twice or after stop()`);
    // The migrate step creates and configures the stream; a service may only read it (ADR 0011). One that owns no
    // event type and consumes none (the gateway) does not need it at all.
    if (ownsEvents(this.name) || this.consumers.length > 0) {
      await awaitEventsStream(this.nc, this.prefix, { replicas: this.config.EVENTS_REPLICAS, log: this.log });
    }
    await this.relay?.start();
    for (const c of this.consumers) await c.start();
    this.rpc.answerUnimplemented([...routesOf(this.name), ...PAGE_ROUTES.filter((p) => p.service === this.name)].map((r) => r.operation));
    this.rpc.handleRaw("_health", () => this.answerHealth());
    this.answerAdminReads();
    this.rpc.start();
    // A PING round trip after the SUBs: when it returns, the server has registered every subscription, so a
    // request sent from any connection once this service says ready finds a responder (not "no responders").
    await this.nc.flush();
    this.health = await startHealthServer({
      host: this.config.HEALTH_HOST,
      port: this.config.HEALTH_PORT,
      registry: this.metrics,
      readiness: () => this.readiness(),
    });
    await this.clock.start();
    for (const hook of this.startHooks) await hook();
    for (const job of this.jobs) job.start();
    this.started = true;
    this.log.info({ health_port: this.health.port }, "ready");
    return { healthPort: this.health.port };
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  installSignalHandlers(): void {
    const onSignal = (signal: NodeJS.Signals): void => {
      this.log.info({ signal }, "shutting down");
      this.stop().then(
        () => process.exit(0),
        (err: unknown) => {
          this.log.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
    installCrashHandlers(this.log);
  }

  private async answerHealth() {
    const db = await probe(() => this.sql`select 1`);
    if (db !== "ok") return errorReply("service_unavailable", `database: ${db}`);
    return { ok: true as const, status: 200, body: { status: "ok" } };
  }

  private async readiness(): Promise<Readiness> {
    const checks: Record<string, string> = {
      started: this.started ? "ok" : "not started",
      shutdown: this.stopping ? "shutting down" : "ok",
      database: await probe(() => this.sql`select 1`),
      nats: await probe(() => this.nc.flush()),
    };
    for (const [i, check] of this.readyChecks.entries()) checks[`check_${i}`] = await probe(check);
    return { ok: Object.values(checks).every((v) => v === "ok"), checks };
  }

  /** Graceful, in dependency order, bounded by SHUTDOWN_TIMEOUT_MS; past it, connections are closed hard. */
  private async shutdown(): Promise<void> {
    const timeoutMs = this.config.SHUTDOWN_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const finished = await Promise.race([this.shutdownSteps().then(() => true), timedOut]);
    clearTimeout(timer);
    if (!finished) {
      this.log.error({ timeout_ms: timeoutMs }, "graceful shutdown timed out; closing connections");
      await this.forceClose();
    }
    this.log.info("stopped");
  }

  private async shutdownSteps(): Promise<void> {
    // Requests first: in-flight handlers may still publish to the outbox or need the pool.
    await this.step("rpc", () => this.rpc.drain());
    await this.step("consumers", async () => void (await Promise.all(this.consumers.map((c) => c.stop()))));
    await this.step("relay", async () => this.relay?.stop());
    await this.step("retention", () => this.retention.stop());
    await this.step("jobs", async () => {
      this.clock.stop();
      await Promise.all(this.jobs.map((j) => j.stop()));
    });
    for (const hook of [...this.shutdownHooks].reverse()) await this.step("hook", hook);
    await this.step("health", async () => this.health?.close());
    if (this.res.ownsNc) await this.step("nats", () => this.nc.drain());
    if (this.res.ownsSql) await this.step("database", () => this.sql.end({ timeout: 5 }));
    await this.step("telemetry", () => this.res.telemetry.shutdown());
  }

  /** One failing step must not keep the others from releasing their resources. */
  private async step(name: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.error({ err, step: name }, "shutdown step failed");
    }
  }

  private async forceClose(): Promise<void> {
    await this.step("health", async () => this.health?.close());
    if (this.res.ownsNc) await this.step("nats", () => this.nc.close());
    if (this.res.ownsSql) await this.step("database", () => this.sql.end({ timeout: 0 }));
  }
}
