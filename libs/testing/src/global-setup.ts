// vitest globalSetup: one PostgreSQL, one NATS JetStream and one Redis for the whole test run, and a migrated
// template database that each test file copies (setupTestEnv). With TEST_NATS_CLUSTER=3 NATS is a three-node
// JetStream cluster from the machine's binaries instead (servers/nats-cluster.ts), each file's EVENTS stream has
// three replicas, and services connect to every node. Each server comes from, in order:
//   1. TEST_DATABASE_URL / TEST_NATS_URL / TEST_REDIS_URL, when set (a server someone else runs);
//   2. a private server started from the machine's binaries, in a temporary folder, on a free port;
//   3. a testcontainers container, when a Docker engine answers;
//   4. otherwise the run fails, naming what to install.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { SERVICES } from "@treasury/contracts";
import { migrateAll } from "@treasury/service-kit";
import { INFRA_KEY, withDatabase, type TestInfra } from "./provided.ts";
import { repoRoot } from "./paths.ts";
import { generateTestNatsAuth, TEST_NATS_SUPERUSER, withNatsCredentials, type TestNatsAuth } from "./nats-auth.ts";
import {
  MissingBinaryError,
  findBinary,
  findPostgresBinaries,
  freePort,
  makeScratchDir,
  startNats,
  startNatsCluster,
  startPostgres,
  startRedis,
  stopPostgresSync,
} from "./servers.ts";

/**
 * Every test file may build all eight services, each with its own pool, and two files run at once;
 * PostgreSQL memory per idle connection is small, so this is generous on purpose.
 */
const testMaxConnections = 400;
const dockerProbeTimeoutMs = 15_000;
const containerStartTimeoutMs = 180_000;
const privateTemplateDb = "treasury_template";
const scratchPrefix = "treasury-test-";
/** Written into each scratch folder so a later run can clean up after a run that was killed with -9. */
const ownerFile = "owner.json";

interface Owner {
  pid: number;
  servers: { pid: number; program: string }[];
}

type Stopper = () => Promise<void>;

interface Resolved {
  url: string;
  source: string;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = runResources();
  sweepStaleScratchDirs();
  try {
    await startInfra(project, run);
  } catch (err) {
    await run.teardown().catch(() => {});
    throw err;
  }
  return run.teardown;
}

/** What the run started and how to undo it. */
interface RunResources {
  stoppers: Stopper[];
  /** Synchronous last resort for an interrupted run: no postmaster or nats-server may outlive it. */
  exitHooks: (() => void)[];
  /** The run's scratch folder, made (with its owner file) on first use. */
  scratchDir: () => string;
  recordServer: RecordServer;
  /** Stops what was started, last first, and runs the exit hooks. */
  teardown: () => Promise<void>;
}

function runResources(): RunResources {
  const stoppers: Stopper[] = [];
  const exitHooks: (() => void)[] = [];
  const onExit = (): void => {
    for (const hook of exitHooks.splice(0)) {
      try {
        hook();
      } catch {
        // best effort while the process exits
      }
    }
  };
  process.once("exit", onExit);

  let scratch: string | undefined;
  const owner: Owner = { pid: process.pid, servers: [] };
  const scratchDir = (): string => {
    if (scratch === undefined) {
      scratch = makeScratchDir(scratchPrefix);
      const dir = scratch;
      writeFileSync(join(dir, ownerFile), JSON.stringify(owner));
      exitHooks.push(() => rmSync(dir, { recursive: true, force: true }));
    }
    return scratch;
  };
  const recordServer = (pid: number | undefined, program: string): void => {
    if (pid === undefined) return;
    owner.servers.push({ pid, program });
    writeFileSync(join(scratchDir(), ownerFile), JSON.stringify(owner));
  };

  const teardown = async (): Promise<void> => {
    const errors: unknown[] = [];
    for (const stop of stoppers.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        errors.push(err);
      }
    }
    onExit();
    process.off("exit", onExit);
    if (errors.length > 0) throw new AggregateError(errors, "test infrastructure teardown failed");
  };
  return { stoppers, exitHooks, scratchDir, recordServer, teardown };
}

/** The three servers and the template database, handed to the test workers. */
async function startInfra(project: TestProject, run: RunResources): Promise<void> {
  const { stoppers, exitHooks, scratchDir, recordServer } = run;
  await failEarlyWhenNothingCanRunServers();
  const pg = await resolveServer(postgresSource(scratchDir), stoppers, exitHooks, recordServer);
  const natsAuth = generateTestNatsAuth();
  const natsNodes = testNatsNodes();
  const nats = await resolveServer(natsSource(scratchDir, natsAuth, natsNodes), stoppers, exitHooks, recordServer);
  // A server named by TEST_NATS_URL is someone else's: its URL is used as it is, and services connect without credentials.
  const natsInfra =
    nats.source === "env"
      ? { natsUrl: nats.url }
      : { natsUrl: withNatsCredentials(nats.url, TEST_NATS_SUPERUSER, natsAuth.superuserPassword), natsPasswords: natsAuth.passwords };
  const redis = await resolveServer(redisSource, stoppers, exitHooks, recordServer);
  const runId = randomBytes(3).toString("hex");
  // A server we did not start may serve other runs at the same time: the template gets this run's name.
  const templateDb = pg.source === "env" ? `treasury_template_${runId}` : privateTemplateDb;
  stoppers.push(() => dropRunDatabases(pg.url, templateDb, runId));
  await createTemplate(pg.url, templateDb);

  const clustered = nats.source === "binaries" && natsNodes > 1 ? { natsNodes } : {};
  const infra: TestInfra = { adminUrl: pg.url, templateDb, ...natsInfra, ...clustered, redisUrl: redis.url, runId };
  project.provide(INFRA_KEY, infra);
  console.log(
    `[testing] postgres (${pg.source}) ${pg.url}, nats (${nats.source}${nats.source === "env" ? "" : ", with authorization"}${"natsNodes" in clustered ? `, a ${natsNodes}-node JetStream cluster` : ""}) ${nats.url}, redis (${redis.source}) ${redis.url}, template ${templateDb}`,
  );
}

type RecordServer = (pid: number | undefined, program: string) => void;

/** TEST_NATS_CLUSTER: how many nats-server nodes to run (1 unless set; a cluster needs 3 to survive one's loss). */
function testNatsNodes(): number {
  const raw = process.env["TEST_NATS_CLUSTER"] ?? "";
  if (raw === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || !(n === 1 || n >= 3)) throw new Error(`TEST_NATS_CLUSTER must be 3 or more (or unset), not ${raw}`);
  return n;
}

/** Where one kind of server comes from: the environment, local binaries, or a container. */
interface ServerSource {
  /** The variable naming a running server to use instead (TEST_DATABASE_URL, …). */
  envVar: string;
  /** Starts one from local binaries; throws MissingBinaryError when they are not installed. */
  local: () => Promise<{ url: string; stop: () => Promise<void>; killSync: () => void; pids?: (number | undefined)[]; program?: string }>;
  /** Starts one in a container (when a Docker engine answers). */
  container: (tc: Testcontainers) => Promise<{ url: string; stop: () => Promise<void> }>;
}

async function resolveServer(source: ServerSource, stoppers: Stopper[], exitHooks: (() => void)[], recordServer: RecordServer): Promise<Resolved> {
  const fromEnv = process.env[source.envVar];
  if (fromEnv !== undefined && fromEnv !== "") return { url: fromEnv, source: "env" };
  try {
    const server = await source.local();
    if (server.program !== undefined) for (const pid of server.pids ?? []) recordServer(pid, server.program);
    stoppers.push(server.stop);
    exitHooks.unshift(server.killSync);
    return { url: server.url, source: "binaries" };
  } catch (err) {
    if (!(err instanceof MissingBinaryError)) throw err;
    return startContainer(err, stoppers, source.container);
  }
}

function postgresSource(scratchDir: () => string): ServerSource {
  return {
    envVar: "TEST_DATABASE_URL",
    local: async () => {
      const dataDir = join(scratchDir(), "pg");
      const server = await startPostgres({ dataDir, port: await freePort(), maxConnections: testMaxConnections, fsync: false });
      // pg_ctl daemonises the server: it is stopped through its data folder, not by pid.
      return { url: server.url, stop: server.stop, killSync: () => stopPostgresSync(dataDir) };
    },
    container: async (tc) => {
      const container = await new tc.GenericContainer("postgres:15")
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
        .withCommand([
          "postgres",
          "-c",
          "fsync=off",
          "-c",
          "synchronous_commit=off",
          "-c",
          "full_page_writes=off",
          "-c",
          `max_connections=${testMaxConnections}`,
        ])
        .withExposedPorts(5432)
        .withWaitStrategy(tc.Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .withStartupTimeout(containerStartTimeoutMs)
        .start();
      return { url: `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`, stop: async () => void (await container.stop()) };
    },
  };
}

/** NATS with the permission matrix and a test superuser (nats-auth.ts), from binaries or a container. */
function natsSource(scratchDir: () => string, auth: TestNatsAuth, nodes: number): ServerSource {
  return {
    envVar: "TEST_NATS_URL",
    local: async () => {
      const configFile = join(scratchDir(), "nats.conf");
      writeFileSync(configFile, auth.config, { mode: 0o600 });
      // Its log is kept after the run (.data/test-output), for a JetStream error a test reports.
      const logDir = join(repoRoot(), ".data", "test-output");
      mkdirSync(logDir, { recursive: true });
      if (nodes > 1) {
        const cluster = await startNatsCluster({ dir: join(scratchDir(), "nats"), nodes, configFile, logDir });
        const pids = cluster.nodes.map((n) => n.pid);
        return { url: cluster.url, stop: () => cluster.stop(), killSync: () => pids.forEach(killQuietly), pids, program: "nats-server" };
      }
      const logFile = join(logDir, "nats-server.log");
      writeFileSync(logFile, "");
      const server = await startNats({ storeDir: join(scratchDir(), "nats"), port: await freePort(), configFile, logFile });
      return { url: server.url, stop: server.stop, killSync: () => killQuietly(server.pid), pids: [server.pid], program: "nats-server" };
    },
    container: async (tc) => {
      const container = await new tc.GenericContainer("nats:2.9")
        .withCopyContentToContainer([{ content: auth.config, target: "/etc/nats/auth.conf" }])
        .withCommand(["-c", "/etc/nats/auth.conf", "-js"])
        .withExposedPorts(4222)
        .withWaitStrategy(tc.Wait.forLogMessage(/Server is ready/))
        .withStartupTimeout(containerStartTimeoutMs)
        .start();
      return { url: `nats://${container.getHost()}:${container.getMappedPort(4222)}`, stop: async () => void (await container.stop()) };
    },
  };
}

const redisSource: ServerSource = {
  envVar: "TEST_REDIS_URL",
  local: async () => {
    const server = await startRedis({ port: await freePort() });
    return { url: server.url, stop: server.stop, killSync: () => killQuietly(server.pid), pids: [server.pid], program: "redis-server" };
  },
  container: async (tc) => {
    const container = await new tc.GenericContainer("redis:7")
      .withCommand(["redis-server", "--save", "", "--appendonly", "no"])
      .withExposedPorts(6379)
      .withWaitStrategy(tc.Wait.forLogMessage(/Ready to accept connections/))
      .withStartupTimeout(containerStartTimeoutMs)
      .start();
    return { url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`, stop: async () => void (await container.stop()) };
  },
};

/**
 * A run killed with -9 runs no teardown: its PostgreSQL (daemonised by pg_ctl), NATS and Redis live on.
 * Scratch folders whose owning process is gone are cleaned here: their servers are stopped by pid (only
 * when /proc confirms the program) and the folder removed.
 */
function sweepStaleScratchDirs(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(tmpdir()).filter((e) => e.startsWith(scratchPrefix));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(tmpdir(), entry);
    let owner: Owner;
    try {
      owner = JSON.parse(readFileSync(join(dir, ownerFile), "utf8")) as Owner;
    } catch {
      continue; // not ours, or still being created
    }
    if (existsSync(`/proc/${owner.pid}`)) continue;
    stopPostgresSync(join(dir, "pg"));
    for (const { pid, program } of owner.servers) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(program)) killQuietly(pid);
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function killQuietly(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

type Testcontainers = typeof import("testcontainers");

let dockerProbe: Promise<boolean> | undefined;

/** Whether a Docker engine answers (asked once per run, bounded). */
function dockerAnswers(): Promise<boolean> {
  dockerProbe ??= (async () => {
    const tc = await import("testcontainers");
    return Promise.race([
      tc.getContainerRuntimeClient().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), dockerProbeTimeoutMs).unref()),
    ]);
  })();
  return dockerProbe;
}

/** One message naming every missing package, rather than one failure per run for each of them. */
async function failEarlyWhenNothingCanRunServers(): Promise<void> {
  const unset = (name: string): boolean => (process.env[name] ?? "") === "";
  const missing: string[] = [];
  if (unset("TEST_DATABASE_URL") && findPostgresBinaries() === undefined) missing.push("postgresql");
  if (unset("TEST_NATS_URL") && findBinary("nats-server") === undefined) missing.push("nats-server");
  if (unset("TEST_REDIS_URL") && findBinary("redis-server") === undefined) missing.push("redis-server");
  if (missing.length === 0 || (await dockerAnswers())) return;
  throw new Error(
    `The tests need a real PostgreSQL, NATS JetStream and Redis, and these are missing: ${missing.join(", ")}.\n` +
      `Install them (Debian/Ubuntu): apt-get install ${missing.join(" ")}\n` +
      "or point the tests at running servers with TEST_DATABASE_URL / TEST_NATS_URL / TEST_REDIS_URL, or start a Docker engine (testcontainers).",
  );
}

/** Third choice, after env and local binaries: a container, when a Docker engine answers. */
async function startContainer(
  missing: MissingBinaryError,
  stoppers: Stopper[],
  start: (tc: Testcontainers) => Promise<{ url: string; stop: Stopper }>,
): Promise<Resolved> {
  if (!(await dockerAnswers())) {
    throw new Error(`${missing.message}\n(No Docker engine answered either, so testcontainers cannot stand in.)`);
  }
  const started = await start(await import("testcontainers"));
  stoppers.push(started.stop);
  return { url: started.url, source: "testcontainers" };
}

/** (Re)creates the template database and migrates every service's schema into it. */
async function createTemplate(adminUrl: string, templateDb: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await dropDatabase(sql, templateDb);
    await sql.unsafe(`create database "${templateDb}"`);
  } finally {
    await sql.end({ timeout: 5 });
  }
  // migrateAll closes its own connections: CREATE DATABASE ... TEMPLATE needs the template idle.
  await migrateAll({ adminUrl: withDatabase(adminUrl, templateDb), rootDir: repoRoot(), services: [...SERVICES] });
  const mark = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await mark.unsafe(`alter database "${templateDb}" is_template true`);
  } finally {
    await mark.end({ timeout: 5 });
  }
}

async function dropDatabase(sql: postgres.Sql, name: string): Promise<void> {
  const [row] = await sql<{ datistemplate: boolean }[]>`select datistemplate from pg_database where datname = ${name}`;
  if (row === undefined) return;
  if (row.datistemplate) await sql.unsafe(`alter database "${name}" is_template false`);
  await sql.unsafe(`drop database if exists "${name}" with (force)`);
}

/** Drops the template and any per-file database of this run that a test file left behind. */
async function dropRunDatabases(adminUrl: string, templateDb: string, runId: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const leftovers = await sql<{ datname: string }[]>`select datname from pg_database where datname like ${`t\\_${runId}\\_%`}`;
    for (const { datname } of leftovers) await dropDatabase(sql, datname);
    await dropDatabase(sql, templateDb);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
