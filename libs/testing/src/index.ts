// Test harness: a private database and NATS subject prefix per test file, on the real servers that the
// global setup (global-setup.ts) started for the run. Files therefore run in parallel without sharing state.
import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import postgres from "postgres";
import { inject } from "vitest";
import { NATS_MIGRATIONS_USER, natsInboxPrefix, type NatsIdentity, type ServiceName } from "@treasury/contracts";
import { connectNats, generateKeyRingEntry, migrateEventsStream, parseNatsUrl, serviceDatabaseUrl, type NatsConnection } from "@treasury/service-kit";
import { INFRA_KEY, withDatabase, type TestInfra } from "./provided.ts";

export { repoRoot } from "./paths.ts";
export { waitFor, type WaitForOptions } from "./wait.ts";
export { err, ok } from "./replies.ts";
export { spawnService, type SpawnedService, type SpawnServiceOptions } from "./spawn.ts";
export {
  freePort,
  makeScratchDir,
  MissingBinaryError,
  startNats,
  startNatsCluster,
  startPostgres,
  startRedis,
  type NatsCluster,
  type NatsClusterNode,
  type NatsServer,
  type PostgresServer,
  type RedisServer,
} from "./servers.ts";
export type { TestInfra } from "./provided.ts";
export { TEST_NATS_SUPERUSER, withNatsCredentials } from "./nats-auth.ts";

/**
 * The NATS client's connection options for a URL with credentials in it (the client reads none from URLs):
 * `connect(natsOptions(env.natsUrl))` connects as the test superuser.
 */
export function natsOptions(url: string): { servers: string[]; user?: string; pass?: string; inboxPrefix?: string } {
  const { user, password } = parseNatsUrl(url);
  // Every node of a cluster (TEST_NATS_CLUSTER), as the client takes them: a list.
  const server = parseNatsUrl(url).server.split(",");
  // Services may answer only the inboxes of identities allowed to call them, the superuser's among them in tests.
  return user === undefined ? { servers: server } : { servers: server, user, pass: password ?? "", inboxPrefix: natsInboxPrefix(user) };
}

export interface TestEnv {
  /** Superuser URL of this file's database. */
  adminUrl: string;
  /** This file's database name (`t_<run>_<random>`). */
  database: string;
  /** URL of this file's database as the service's own role (`<service>_svc`). */
  dbUrl(service: ServiceName): string;
  /**
   * The test superuser's NATS URL (`nats://user:password@host:port`): for what a test does itself (spies, stand-in
   * services). Connect with service-kit's connectNats(), which reads the credentials in it.
   */
  natsUrl: string;
  /**
   * A NATS connection of the test superuser, opened on first use and closed by cleanup(): the way a test calls a
   * service's operations itself (a service's own connection may not publish to its public subjects).
   */
  nats(): Promise<NatsConnection>;
  /** An identity's NATS credentials (ADR 0011); undefined on a server without authorization (TEST_NATS_URL). */
  natsCredentials(identity: NatsIdentity): { user: string; password: string } | undefined;
  redisUrl: string;
  /** NATS subject prefix of this file, e.g. "t3k9x." (pass as NATS_PREFIX). */
  prefix: string;
  /** postgres.js as superuser on this file's database (setup and assertions only; services use their roles). */
  adminSql: postgres.Sql;
  /**
   * Environment for createService / spawnService of `service`, on this file's database and prefix, connecting to
   * NATS as its own identity.
   */
  env(service: ServiceName, extra?: Record<string, string>): Record<string, string>;
  /** Closes connections, drops the database and this prefix's JetStream streams. Idempotent. */
  cleanup(): Promise<void>;
}

const createDatabaseAttemptsMax = 5;
const natsCleanupTimeoutMs = 5_000;

function readInfra(): TestInfra {
  let infra: TestInfra | undefined;
  try {
    infra = inject(INFRA_KEY);
  } catch {
    infra = undefined;
  }
  if (infra !== undefined) return infra;
  // Outside the vitest global setup (a script, a debugger): servers named by the environment.
  const adminUrl = process.env["TEST_DATABASE_URL"];
  const natsUrl = process.env["TEST_NATS_URL"];
  if (adminUrl === undefined || natsUrl === undefined) {
    throw new Error(
      "setupTestEnv: no test infrastructure. Run tests with vitest (root vitest.config.ts runs the global setup), or set TEST_DATABASE_URL and TEST_NATS_URL and a migrated TEST_TEMPLATE_DB.",
    );
  }
  return {
    adminUrl,
    natsUrl,
    redisUrl: process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379",
    templateDb: process.env["TEST_TEMPLATE_DB"] ?? "treasury_template",
    runId: "manual",
  };
}

function randomToken(bytes: number): string {
  // base36 of random bytes: lowercase letters and digits, valid in database names and NATS subjects.
  return BigInt(`0x${randomBytes(bytes).toString("hex")}`).toString(36);
}

/** Use once per test file (beforeAll), and call cleanup() in afterAll. */
export async function setupTestEnv(): Promise<TestEnv> {
  const infra = readInfra();
  const database = `t_${infra.runId}_${randomToken(6)}`;
  const prefix = `t${randomToken(4).slice(0, 6)}.`;
  await createDatabaseFromTemplate(infra.adminUrl, database, infra.templateDb);

  const adminUrl = withDatabase(infra.adminUrl, database);
  const adminSql = postgres(adminUrl, { max: 5, onnotice: () => {} });
  const dbUrl = (service: ServiceName): string => serviceDatabaseUrl(adminUrl, service);

  const natsServer = parseNatsUrl(infra.natsUrl).server;
  const natsCredentials = (identity: NatsIdentity): { user: string; password: string } | undefined => {
    const password = infra.natsPasswords?.[identity];
    return password === undefined ? undefined : { user: identity, password };
  };
  // The migrate step's work for this file's prefix, as the `migrations` identity, the only one allowed to (ADR 0011);
  // without authorization (TEST_NATS_URL), as the URL's user.
  const migrations = natsCredentials(NATS_MIGRATIONS_USER);
  const eventsReplicas = infra.natsNodes ?? 1;
  await migrateEventsStream(
    migrations === undefined ? { url: infra.natsUrl, name: "test-migrate" } : { url: natsServer, name: "test-migrate", ...migrations },
    prefix,
    eventsReplicas,
  );
  const natsEnv = (service: ServiceName): Record<string, string> => {
    const creds = natsCredentials(service);
    return creds === undefined ? {} : { NATS_USER: creds.user, NATS_PASSWORD: creds.password };
  };

  // The webhooks service keeps endpoint secrets sealed and delivers nothing without a key ring: every test gets one.
  const webhookSecretKeys = generateKeyRingEntry("test1");
  let caller: Promise<NatsConnection> | undefined;
  let cleaned: Promise<void> | undefined;
  return {
    adminUrl,
    database,
    dbUrl,
    natsUrl: infra.natsUrl,
    natsCredentials,
    nats: () => (caller ??= connectNats({ url: infra.natsUrl, name: "test-caller" })),
    redisUrl: infra.redisUrl,
    prefix,
    adminSql,
    env: (service, extra = {}) => ({
      DATABASE_URL: dbUrl(service),
      NATS_URL: natsServer,
      ...natsEnv(service),
      NATS_PREFIX: prefix,
      EVENTS_REPLICAS: String(eventsReplicas),
      HEALTH_HOST: "127.0.0.1",
      HEALTH_PORT: "0",
      LOG_LEVEL: process.env["TEST_LOG_LEVEL"] ?? "silent",
      ...(service === "gateway" ? { REDIS_URL: infra.redisUrl, HOST: "127.0.0.1", PORT: "0", ALT_PORT: "0" } : {}),
      ...(service === "webhooks" ? { WEBHOOK_SECRET_KEYS: webhookSecretKeys } : {}),
      ...extra,
    }),
    cleanup: () => {
      cleaned ??= (async () => {
        if (caller !== undefined) await (await caller).close();
        await adminSql.end({ timeout: 5 });
        await dropDatabase(infra.adminUrl, database);
        await deleteStreamsUnder(infra.natsUrl, prefix);
      })();
      return cleaned;
    },
  };
}

async function createDatabaseFromTemplate(adminUrl: string, database: string, templateDb: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await sql.unsafe(`create database "${database}" template "${templateDb}"`);
        return;
      } catch (err) {
        // 55006: the template is briefly in use (a stray session on it); retry a few times with jitter.
        const inUse = (err as { code?: string }).code === "55006";
        if (!inUse || attempt >= createDatabaseAttemptsMax) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt + Math.random() * 100));
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function dropDatabase(adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop database if exists "${database}" with (force)`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Deletes the JetStream streams whose subjects all lie under `prefix` (matters on a shared NATS). */
async function deleteStreamsUnder(natsUrl: string, prefix: string): Promise<void> {
  const nc = await connectNats({ url: natsUrl, name: "test-cleanup" });
  try {
    const jsm = await jetstreamManager(nc, { timeout: natsCleanupTimeoutMs });
    const names: string[] = [];
    for await (const info of jsm.streams.list()) {
      const subjects = info.config.subjects ?? [];
      if (subjects.length > 0 && subjects.every((s) => s.startsWith(prefix))) names.push(info.config.name);
    }
    for (const name of names) await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}

/**
 * A risk gate that allows every movement: for a service's integration tests that run it without the risk service
 * (the kit's gate would find no risk replica and follow the org's fail mode). End-to-end tests run the real one.
 */
export const allowRisk = {
  check: async (): Promise<{ decision: "allow"; evaluationId: string; failedOpen: false }> => ({
    decision: "allow",
    evaluationId: "feval_test",
    failedOpen: false,
  }),
};
