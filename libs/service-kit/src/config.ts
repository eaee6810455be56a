import { z } from "zod";
import { INBOX_RETENTION_DAYS_MIN } from "./retention.ts";

/** Subject prefixes isolate deployments and test files; they are dot-terminated tokens or empty. */
const NATS_PREFIX_RE = /^(?:[A-Za-z0-9_-]+\.)*$/;

/** The environment every service reads. Services add their own keys through `extraEnv`. */
export const BaseEnv = z.object({
  DATABASE_URL: z.string().min(1),
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  NATS_PREFIX: z.string().regex(NATS_PREFIX_RE, "must be empty or dot-terminated tokens, like `t1a2b.`").default(""),
  /**
   * The service's own NATS identity (ADR 0011): the user name is the service's, the password comes from a secret.
   * Both or neither (natsConnectOptions() says so at startup); a password is never logged. Credentials in NATS_URL (`nats://user:pass@host`) work too.
   */
  NATS_USER: z.string().min(1).optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  /** TLS to NATS: the CA that signed the server's certificate, and a client certificate and key if it asks for one. */
  NATS_TLS_CA: z.string().min(1).optional(),
  NATS_TLS_CERT: z.string().min(1).optional(),
  NATS_TLS_KEY: z.string().min(1).optional(),
  HEALTH_HOST: z.string().min(1).default("127.0.0.1"),
  /** 0 asks the OS for a free port; the bound port is logged in the `ready` line. */
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(1000).default(10),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  RPC_CONCURRENCY_MAX: z.coerce.number().int().min(1).max(100_000).default(256),
  /**
   * How long a money movement waits for risk's evaluation (risk-gate.ts) before the org's fail mode decides. Risk
   * answers an org without policies from one indexed read; ten policies with counters take a few milliseconds.
   */
  RISK_DEADLINE_MS: z.coerce.number().int().min(10).max(30_000).default(1000),
  /**
   * Requests of one org a process works on at once (fair admission: libs/service-kit/src/tenant-admission.ts);
   * past it that org's next requests answer 503 with Retry-After, other orgs' are not affected. Default: a
   * quarter of RPC_CONCURRENCY_MAX.
   */
  RPC_TENANT_CONCURRENCY_MAX: z.coerce.number().int().min(1).max(100_000).optional(),
  /**
   * Replicas of the EVENTS stream: 1 on a single NATS server (more is refused there), 3 on a 3-node JetStream
   * cluster. Give every service the same value: each one brings the stream to it when it starts.
   */
  EVENTS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * After a commit wakes the outbox relay, how long it waits so the events of commits arriving together go out in
   * one cycle. Each cycle costs PostgreSQL two short transactions and the service a pass over the outbox, whatever
   * it carries; without the wait a moderately busy service pays that per commit. 0 publishes at once.
   */
  OUTBOX_COALESCE_MS: z.coerce.number().int().min(0).max(1000).default(10),
  /** Days a published outbox event is kept after publishing (the stream has it); 0 keeps them forever. */
  OUTBOX_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(14),
  /**
   * Days an inbox claim is kept; 0 keeps them forever. At least the EVENTS stream's max age plus a day, so an
   * event the broker can still deliver again is still recognised.
   */
  INBOX_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .max(3650)
    .default(14)
    .refine(
      (d) => d === 0 || d >= INBOX_RETENTION_DAYS_MIN,
      `must be 0 (keep forever) or at least ${INBOX_RETENTION_DAYS_MIN} (the EVENTS stream keeps events ${INBOX_RETENTION_DAYS_MIN - 1} days)`,
    ),
});
export type BaseConfig = z.infer<typeof BaseEnv>;

/** Raised at startup with every configuration problem at once, so one restart fixes them all. */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/**
 * Parses the environment against a schema. Empty strings count as unset: orchestrators and shells often
 * export `FOO=` for "no value", and a default should apply then rather than a parse error.
 */
export function loadConfig<T extends z.ZodObject>(schema: T, env: Record<string, string | undefined>): z.infer<T> {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`));
}
