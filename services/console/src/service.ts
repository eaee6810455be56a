/**
 * The operator console: server-rendered pages under /console on its own HTTP port, reached through the gateway's
 * browser listener (ADR 0021). Operators are accounts of this service (console.operators, created by
 * `admin operator create`) with sessions and a lockout; every read and action is an operator command sent over
 * NATS to the service that owns it, carrying the operator as the actor, exactly as the CLI sends it (ADR 0016).
 * The console holds no other service's database or secret.
 */
import { randomBytes } from "node:crypto";
import { newId } from "@treasury/contracts";
import { createService, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { AdminClient } from "@treasury/service-kit/operator-client";
import type { FastifyInstance } from "fastify";
import { natsOperatorCommands } from "./adapters/commands.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { ConsoleEnv } from "./config.ts";
import { buildConsoleApp } from "./http/app.ts";
import { pgOperatorStore } from "./store/operators.ts";
import { pgAttemptStore, pgSessionStore, purgeLoginAttempts } from "./store/sessions.ts";
import type { ConsoleDeps } from "./usecases/ports.ts";

export type ConsoleService = Service<ServiceConfig<typeof ConsoleEnv>> & {
  deps: ConsoleDeps;
  app: FastifyInstance;
  /** The HTTP port it listens on, once started (useful when 0 asked for an ephemeral one). */
  httpPort(): number;
};

/** Failed sign-ins that lock an address, and for how long (OWASP's usual: a handful, a quarter of an hour). */
const LOCKOUT_FAILURES = 5;
const LOCKOUT_WINDOW_MS = 15 * 60_000;
const LOGIN_ATTEMPT_RETENTION_DAYS = 90;
/** Ended sessions are deleted a day after their absolute end (they no longer sign anyone in from that end). */
const SESSION_RETENTION_DAYS = 1;

export async function buildConsole(env: Record<string, string | undefined>, deps: ServiceDeps = {}): Promise<ConsoleService> {
  const svc = await createService({ name: "console", env, extraEnv: ConsoleEnv, deps });
  const cfg = svc.config;
  const sessions = pgSessionStore(svc.sql);
  const useCaseDeps: ConsoleDeps = {
    operators: pgOperatorStore(svc.sql),
    sessions,
    attempts: pgAttemptStore(svc.sql),
    policy: {
      idleMs: cfg.CONSOLE_SESSION_IDLE_MS,
      absoluteMs: cfg.CONSOLE_SESSION_ABSOLUTE_MS,
      lockoutFailures: LOCKOUT_FAILURES,
      lockoutWindowMs: LOCKOUT_WINDOW_MS,
    },
    now: () => new Date(),
    newId: () => newId("opr"),
    randomToken: () => randomBytes(32).toString("base64url"),
  };
  registerAdminCommands(svc, useCaseDeps);
  svc.retention.add({ name: "console.sessions", days: SESSION_RETENTION_DAYS, purge: (before, limit) => sessions.purgeExpired(before, limit) });
  svc.retention.add({
    name: "console.login_attempts",
    days: LOGIN_ATTEMPT_RETENTION_DAYS,
    purge: (before, limit) => purgeLoginAttempts(svc.sql, before, limit),
  });
  const client = new AdminClient(svc.nc, svc.prefix);
  const commands = natsOperatorCommands(client, cfg.CONSOLE_COMMAND_TIMEOUT_MS);
  const app = await buildConsoleApp({ deps: useCaseDeps, commands, client, secureCookies: cfg.CONSOLE_SECURE_COOKIES === "true", log: svc.log });
  let port = 0;
  svc.onStart(async () => {
    await app.listen({ host: cfg.CONSOLE_HOST, port: cfg.CONSOLE_PORT });
    const address = app.server.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
    svc.log.info({ port }, "console listening");
  });
  svc.onShutdown(async () => app.close());
  return Object.assign(svc, { deps: useCaseDeps, app, httpPort: () => port });
}
