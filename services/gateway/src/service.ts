/**
 * Wires the gateway: service kit (config, logs, tracing, NATS, DB, health), auth, rate limits, listeners, and the
 * operator commands and `find` answers for its orgs, keys and settings.
 */
import type { Logger } from "pino";
import { z } from "zod";
import { Redis } from "ioredis";
import type { FastifyInstance } from "fastify";
import { Histogram } from "prom-client";
import { createService, type ServiceDeps } from "@treasury/service-kit";
import { registerAdminCommands } from "./admin/commands.ts";
import { pgFinder } from "./admin/find.ts";
import { natsKybCheck } from "./admin/kyb.ts";
import { Authenticator, type KeyStore } from "./auth.ts";
import { pgKeyStore } from "./key-store.ts";
import { buildPublicApp } from "./app.ts";
import { TrustProxyEnv } from "./trust-proxy.ts";
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from "./ratelimit.ts";

export const GatewayEnv = {
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  ALT_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  HOST: z.string().default("127.0.0.1"),
  REDIS_URL: z.string().url().optional(),
  RPC_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  HEALTH_CHECK_TIMEOUT_MS: z.coerce.number().int().positive().default(1_000),
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  AUTH_FAILURES_PER_MIN: z.coerce.number().int().positive().default(60),
  /** Proxies allowed to name the client in X-Forwarded-For: a hop count or addresses/CIDRs (trust-proxy.ts). */
  TRUST_PROXY: TrustProxyEnv,
  /** Public base URL of the alt listener; default http://HOST:<alt port>. */
  ALT_BASE_URL: z.string().url().optional(),
  /** The operator console service's HTTP base URL (http://console:8090): the alt listener forwards /console to it. */
  CONSOLE_URL: z.string().url().optional(),
};

export interface Gateway {
  main: FastifyInstance;
  alt: FastifyInstance;
  /** Listening ports (useful when 0 asked for an ephemeral one). */
  ports: { main: number; alt: number; health: number };
  /** The gateway's logger (the process logs a crash through it). */
  log: Logger;
  stop(): Promise<void>;
}

/** What a host process or a test may supply; the key store defaults to the service's own database. */
export interface GatewayBuildDeps extends ServiceDeps {
  keyStore?: KeyStore;
}

export async function buildGateway(env: Record<string, string | undefined>, deps: GatewayBuildDeps = {}): Promise<Gateway> {
  const { keyStore, ...serviceDeps } = deps;
  const svc = await createService({ name: "gateway", env, extraEnv: GatewayEnv, deps: serviceDeps });
  const cfg = svc.config;
  registerAdminCommands(svc, { kyb: natsKybCheck(svc.nc, svc.prefix, cfg.RPC_TIMEOUT_MS) });
  svc.adminFind(pgFinder(svc.sql));
  const authenticator = new Authenticator(keyStore ?? pgKeyStore(svc.sql), cfg.AUTH_CACHE_TTL_MS);
  await authenticator.start();
  // Buckets in Redis are named under the deployment's NATS_PREFIX: replicas of one deployment share them, and
  // deployments sharing one Redis (or parallel test files) never spend each other's budgets, per-IP ones included.
  // Auto-pipelining sends the buckets taken in one event-loop turn (dozens under load) to Redis as one write.
  const limiter: RateLimiter = cfg.REDIS_URL
    ? new RedisRateLimiter(new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true }), `rl:${svc.prefix}`)
    : new MemoryRateLimiter();
  const httpDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Gateway HTTP request duration by route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [svc.metrics],
  });
  let closing = false;
  let altBaseUrl = cfg.ALT_BASE_URL ?? "";
  const appDeps = {
    isClosing: () => closing,
    altBaseUrl: () => altBaseUrl,
    nc: svc.nc,
    prefix: svc.prefix,
    log: svc.log,
    authenticator,
    limiter,
    rpcTimeoutMs: cfg.RPC_TIMEOUT_MS,
    healthTimeoutMs: cfg.HEALTH_CHECK_TIMEOUT_MS,
    authFailuresPerMin: cfg.AUTH_FAILURES_PER_MIN,
    trustProxy: cfg.TRUST_PROXY,
    dbPing: async () => void (await svc.sql`select 1`),
    httpDuration,
    consoleUrl: cfg.CONSOLE_URL,
  };
  const main = await buildPublicApp(appDeps, { alt: false });
  const alt = await buildPublicApp(appDeps, { alt: true });
  const { healthPort } = await svc.start();
  await main.listen({ host: cfg.HOST, port: cfg.PORT });
  await alt.listen({ host: cfg.HOST, port: cfg.ALT_PORT });
  const portOf = (app: FastifyInstance) => {
    const a = app.server.address();
    return typeof a === "object" && a ? a.port : 0;
  };
  const ports = { main: portOf(main), alt: portOf(alt), health: healthPort };
  if (altBaseUrl === "") altBaseUrl = `http://${cfg.HOST}:${ports.alt}`;
  svc.log.info({ ports }, "gateway listening");

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop taking HTTP requests and let in-flight ones finish (they may still be waiting on a service),
      // then stop the kit (NATS drain, pool close).
      closing = true;
      await Promise.all([main.close(), alt.close()]);
      await authenticator.stop();
      await limiter.close();
      await svc.stop();
    })());
  return { main, alt, ports, stop, log: svc.log };
}
