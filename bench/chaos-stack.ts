/**
 * A private stack for fault injection and soak runs: its own PostgreSQL and nats-server (with the permission
 * matrix's authorization, ADR 0011) and a Redis for the gateway's rate limits (as deployed) on loopback ports, every service as a child process under a supervisor that
 * starts it again when it dies (as `npm start` does, without the long backoff), and the faults themselves:
 * kill -9 of one service process, a crash and restart of nats-server, `pg_ctl restart -m immediate`. With
 * `natsCluster: 3` NATS is a three-node JetStream cluster (libs/testing startNatsCluster), the EVENTS stream has three
 * replicas (EVENTS_REPLICAS=3, as deployed), services connect to every node, and the NATS fault is kill -9 of one
 * node (one that leads nothing, or the EVENTS stream's leader), started again after a pod restart's outage.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, writeFileSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import {
  eventsStreamName,
  natsConfigString,
  natsServerAuthorization,
  natsUsers,
  NATS_IDENTITIES,
  NATS_MIGRATIONS_USER,
  SERVICES,
  type ServiceName,
} from "@treasury/contracts";
import { generateKeyRingEntry, migrateAll, migrateEventsStream, serviceDatabaseUrl } from "@treasury/service-kit";
import {
  freePort,
  makeScratchDir,
  repoRoot,
  startNats,
  startNatsCluster,
  startPostgres,
  startRedis,
  type NatsCluster,
  type NatsServer,
  type PostgresServer,
  type RedisServer,
} from "@treasury/testing";
import { findPostgresBinaries, isRoot } from "@treasury/testing/servers";
import { GATEWAY_NODE_OPTIONS, LEDGER_NODE_OPTIONS, nodeOptions } from "./lib/processes.ts";

/** How long a dead service waits before it starts again; doubled per crash of its own within QUICK_CRASH_MS. */
const RESTART_DELAY_MS = 100;
const RESTART_DELAY_MAX_MS = 5_000;
const QUICK_CRASH_MS = 5_000;
const READY_TIMEOUT_MS = 120_000;
const READY_POLL_MS = 100;
const STOP_TIMEOUT_MS = 15_000;
const PG_RESTART_TIMEOUT_MS = 60_000;
/** How long nats-server stays down after its kill: a restart's outage, during which clients reconnect in vain. */
const NATS_DOWN_MS = 1_000;
/**
 * How long a killed NATS node of a cluster stays down: about what a Kubernetes pod's restart takes, long enough that
 * the load runs on two nodes (and, for the stream leader, through an election) before the node returns and catches up.
 */
const NATS_NODE_DOWN_MS = 5_000;
/** Connections per service process's pool (the default of a deployment). */
const DB_POOL_MAX = 10;

export interface ServicePlan {
  name: ServiceName;
  replicas: number;
}

export interface StackOptions {
  services: ServicePlan[];
  /** Extra environment per service, on top of what the stack sets. */
  env?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Logs of the servers and of every service instance go here (default: a new scratch folder). */
  dir?: string;
  /** NATS nodes: 1 (default) runs one nats-server, 3 a JetStream cluster with the EVENTS stream on all three. */
  natsCluster?: number;
}

/** Which NATS node a fault kills: one leading neither the EVENTS stream nor the meta group, or the stream's leader. */
export type NatsNodeRole = "follower" | "leader";

/** One supervised process of a service (`ledger#2` is the ledger's second replica). */
export interface Instance {
  id: string;
  name: ServiceName;
  healthPort: number;
  env: Record<string, string>;
  proc: ChildProcess | undefined;
  /** Starts of this instance so far (1 after the first start). */
  starts: number;
  /** Exits nobody asked for (not a fault's kill, not the stack's stop), with how they ended. */
  crashes: string[];
  /** When it last answered /readyz after a start (performance.now()). */
  readyAt: number;
}

export interface ChaosStack {
  dir: string;
  adminUrl: string;
  gatewayUrl: string;
  instances: Instance[];
  /** Kills one instance with SIGKILL (the supervisor starts it again); answers its pid. */
  kill(id: string): number;
  /** Resolves when the instance answers /readyz after `since` (performance.now()), with that time. */
  readyAgain(id: string, since: number, timeoutMs?: number): Promise<number>;
  /** kill -9 nats-server and start it again a second later on the same port and store; resolves once it listens. */
  restartNats(): Promise<void>;
  /**
   * On a cluster: kill -9 of one node chosen by its role, started again NATS_NODE_DOWN_MS later; resolves once it is
   * current with the others again, with the node's name.
   */
  killNatsNode(role: NatsNodeRole, log: (line: string) => void): Promise<string>;
  /** `pg_ctl restart -m immediate` (a crash and recovery of PostgreSQL); resolves once it accepts connections. */
  restartPostgres(): Promise<void>;
  stop(): Promise<void>;
}

interface Servers {
  pg: PostgresServer;
  natsUrl: string;
  /** The gateway's rate-limit buckets live here, as deployed (k8s/base/gateway.yaml REDIS_URL). */
  redisUrl: string;
  natsPasswords: Record<string, string>;
  /** The cluster, when NATS is one (its nodes are killed one at a time). */
  cluster: NatsCluster | undefined;
  restartNats(): Promise<void>;
  stop(): Promise<void>;
}

/** PostgreSQL (fsync on: a crash must not lose what it acknowledged), nats-server with authorization, and Redis; migrated. */
async function startServers(dir: string, maxConnections: number, natsNodes: number): Promise<Servers> {
  const pg = await startPostgres({ dataDir: join(dir, "pg"), port: await freePort(), maxConnections, fsync: true });
  const natsPasswords = Object.fromEntries(NATS_IDENTITIES.map((i) => [i, randomBytes(18).toString("hex")]));
  const configFile = join(dir, "nats.conf");
  writeFileSync(configFile, natsServerAuthorization(natsUsers((i) => natsConfigString(natsPasswords[i] ?? ""), { prefix: "" })), { mode: 0o600 });
  const natsOpts = { configFile, storeDir: join(dir, "nats"), port: await freePort(), logFile: join(dir, "nats.log") };
  let nats: NatsServer | undefined;
  let cluster: NatsCluster | undefined;
  let redis: RedisServer;
  const started: { stop(): Promise<void> }[] = [pg];
  try {
    if (natsNodes > 1) cluster = await startNatsCluster({ dir: join(dir, "nats"), nodes: natsNodes, configFile, logDir: dir });
    else nats = await startNats(natsOpts);
    started.push(cluster ?? (nats as NatsServer));
    redis = await startRedis({ port: await freePort() });
    started.push(redis);
    await migrateAll({ adminUrl: pg.url, rootDir: repoRoot(), services: SERVICES });
    // The migrate step creates the EVENTS stream, as the one identity allowed to; services only wait for it (ADR 0011).
    const migrations = { user: NATS_MIGRATIONS_USER, password: natsPasswords[NATS_MIGRATIONS_USER] ?? "" };
    await migrateEventsStream(
      { url: cluster?.url ?? (nats as NatsServer).url, name: "chaos-migrate", ...migrations },
      "",
      cluster === undefined ? 1 : natsNodes,
    );
  } catch (err) {
    for (const server of started.reverse()) await server.stop().catch(() => {});
    throw err;
  }
  return {
    pg,
    natsUrl: cluster?.url ?? (nats as NatsServer).url,
    redisUrl: redis.url,
    natsPasswords,
    cluster,
    async restartNats() {
      if (nats === undefined) throw new Error("restartNats: NATS is a cluster here; kill one node instead (killNatsNode)");
      if (nats.pid !== undefined) process.kill(nats.pid, "SIGKILL");
      await nats.stop();
      await new Promise((r) => setTimeout(r, NATS_DOWN_MS));
      nats = await startNats(natsOpts);
    },
    async stop() {
      await (cluster ?? nats)?.stop().catch(() => {});
      await redis.stop().catch(() => {});
      await pg.stop().catch(() => {});
    },
  };
}

/** kill -9 of the cluster's node in `role`, down NATS_NODE_DOWN_MS, started again and caught up; answers its name. */
async function killNatsNode(cluster: NatsCluster | undefined, role: NatsNodeRole, log: (line: string) => void): Promise<string> {
  if (cluster === undefined) throw new Error("killNatsNode: NATS is a single server here (start the stack with natsCluster: 3)");
  const stream = eventsStreamName("");
  const streamLeader = await cluster.streamLeader(stream);
  const metaLeader = await cluster.metaLeader();
  if (streamLeader === undefined) throw new Error(`the ${stream} stream has no leader before the fault`);
  // A follower leads nothing when one such node exists (three nodes: the meta leader may lead the stream as well).
  const followers = cluster.nodes.filter((n) => n.name !== streamLeader);
  const target = role === "leader" ? streamLeader : (followers.find((n) => n.name !== metaLeader) ?? followers[0])?.name;
  if (target === undefined) throw new Error("no NATS node to kill");
  // A node without clients would prove nothing: the services' connections are spread over the nodes.
  const clients = await cluster.clients(target);
  const pid = await cluster.kill(target);
  log(`    NATS node ${target} killed (pid ${pid}, ${clients ?? "?"} clients; stream leader ${streamLeader}, meta leader ${metaLeader ?? "none"})`);
  await new Promise((r) => setTimeout(r, NATS_NODE_DOWN_MS));
  await cluster.start(target);
  log(`    NATS node ${target} back; stream leader now ${(await cluster.streamLeader(stream)) ?? "none"}`);
  return target;
}

/** Each planned instance with its environment: its own role and NATS identity, its health port, key rings. */
async function planInstances(opts: StackOptions, servers: Servers, gatewayPorts: { main: number; alt: number }): Promise<Instance[]> {
  const keyRings: Partial<Record<ServiceName, Record<string, string>>> = {
    kyc: { PII_KEYS: generateKeyRingEntry("chaos1") },
    payouts: { PII_KEYS: generateKeyRingEntry("chaos1") },
    receipts: { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("chaos1") },
    webhooks: { WEBHOOK_SECRET_KEYS: generateKeyRingEntry("chaos1") },
    ledger: nodeOptions(LEDGER_NODE_OPTIONS),
    gateway: {
      HOST: "127.0.0.1",
      PORT: String(gatewayPorts.main),
      ALT_PORT: String(gatewayPorts.alt),
      REDIS_URL: servers.redisUrl,
      ...nodeOptions(GATEWAY_NODE_OPTIONS),
    },
  };
  const instances: Instance[] = [];
  for (const plan of opts.services) {
    for (let r = 1; r <= plan.replicas; r++) {
      const healthPort = await freePort();
      const env = {
        DATABASE_URL: serviceDatabaseUrl(servers.pg.url, plan.name),
        NATS_URL: servers.natsUrl,
        EVENTS_REPLICAS: String(servers.cluster?.nodes.length ?? 1),
        NATS_USER: plan.name,
        NATS_PASSWORD: servers.natsPasswords[plan.name] ?? "",
        NATS_PREFIX: "",
        HEALTH_HOST: "127.0.0.1",
        HEALTH_PORT: String(healthPort),
        LOG_LEVEL: "warn",
        DB_POOL_MAX: String(DB_POOL_MAX),
        ...keyRings[plan.name],
        ...opts.env?.[plan.name],
      };
      instances.push({
        id: plan.replicas > 1 ? `${plan.name}#${r}` : plan.name,
        name: plan.name,
        healthPort,
        env,
        proc: undefined,
        starts: 0,
        crashes: [],
        readyAt: 0,
      });
    }
  }
  return instances;
}

/** Starts service processes and starts them again when they die, unless a fault or the stop asked for it. */
class Supervisor {
  private stopping = false;
  private readonly expectedKills = new Set<ChildProcess>();
  private readonly logs = new Map<string, WriteStream>();

  constructor(private readonly dir: string) {}

  launch(inst: Instance): void {
    const log = this.logs.get(inst.id) ?? createWriteStream(join(this.dir, `${inst.id.replace("#", "-")}.log`), { flags: "a" });
    this.logs.set(inst.id, log);
    const proc = spawn(process.execPath, ["--import", "tsx", join(repoRoot(), "services", inst.name, "src", "main.ts")], {
      cwd: repoRoot(),
      env: { ...process.env, ...inst.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout?.pipe(log, { end: false });
    proc.stderr?.pipe(log, { end: false });
    inst.proc = proc;
    inst.starts += 1;
    const startedAt = performance.now();
    proc.once("exit", (code, signal) => {
      if (this.stopping) return;
      const asked = this.expectedKills.delete(proc);
      if (!asked) inst.crashes.push(`${signal ?? `exit ${code}`} after ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);
      // A process that keeps dying by itself backs off; one killed by a fault comes back at once.
      const quick = !asked && performance.now() - startedAt < QUICK_CRASH_MS;
      const delay = quick ? Math.min(RESTART_DELAY_MAX_MS, RESTART_DELAY_MS * 2 ** inst.crashes.length) : RESTART_DELAY_MS;
      setTimeout(() => {
        if (!this.stopping) this.launch(inst);
      }, delay);
    });
  }

  kill(inst: Instance): number {
    const proc = inst.proc;
    if (proc?.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${inst.id} is not running`);
    this.expectedKills.add(proc);
    proc.kill("SIGKILL");
    return proc.pid;
  }

  async readyAgain(inst: Instance, since: number, timeoutMs: number): Promise<number> {
    const until = performance.now() + timeoutMs;
    while (inst.readyAt <= since) {
      if (performance.now() > until) throw new Error(`${inst.id} was not ready again within ${timeoutMs} ms`);
      const proc = inst.proc;
      const alive = () => proc !== undefined && proc.exitCode === null && proc.signalCode === null;
      if (alive() && (await answersReady(inst.healthPort))) inst.readyAt = performance.now();
      else await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
    return inst.readyAt;
  }

  async stop(instances: Instance[]): Promise<void> {
    this.stopping = true;
    const live = instances.map((i) => i.proc).filter((p): p is ChildProcess => p !== undefined && p.exitCode === null && p.signalCode === null);
    await Promise.all(
      live.map(
        (p) =>
          new Promise<void>((resolve) => {
            p.once("exit", () => resolve());
            p.kill("SIGTERM");
            setTimeout(() => p.kill("SIGKILL"), STOP_TIMEOUT_MS).unref();
          }),
      ),
    );
    for (const log of this.logs.values()) log.end();
  }
}

async function answersReady(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
    async (r) => (await r.body?.cancel(), r.status === 200),
    () => false,
  );
}

/** Starts PostgreSQL, nats-server with authorization, the migrations and every planned service instance. */
export async function startChaosStack(opts: StackOptions): Promise<ChaosStack> {
  const dir = opts.dir ?? makeScratchDir("treasury-chaos-");
  // Every pool, each outbox relay's and listener's own connections, and room for the run's own sessions.
  const maxConnections = opts.services.reduce((n, s) => n + s.replicas * (DB_POOL_MAX + 5), 0) + 40;
  const servers = await startServers(dir, maxConnections, opts.natsCluster ?? 1);
  const gatewayPorts = { main: await freePort(), alt: await freePort() };
  const instances = await planInstances(opts, servers, gatewayPorts);
  const supervisor = new Supervisor(dir);
  const find = (id: string): Instance => {
    const inst = instances.find((i) => i.id === id);
    if (inst === undefined) throw new Error(`no instance ${id}`);
    return inst;
  };
  const stop = async () => {
    await supervisor.stop(instances);
    await servers.stop();
  };
  try {
    for (const inst of instances) supervisor.launch(inst);
    await Promise.all(instances.map((i) => supervisor.readyAgain(i, 0, READY_TIMEOUT_MS)));
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    dir,
    adminUrl: servers.pg.url,
    gatewayUrl: `http://127.0.0.1:${gatewayPorts.main}`,
    instances,
    kill: (id) => supervisor.kill(find(id)),
    readyAgain: (id, since, timeoutMs = READY_TIMEOUT_MS) => supervisor.readyAgain(find(id), since, timeoutMs),
    restartNats: () => servers.restartNats(),
    killNatsNode: (role, log) => killNatsNode(servers.cluster, role, log),
    restartPostgres: () => restartPostgres(servers.pg),
    stop,
  };
}

/** `pg_ctl restart -m immediate`: the server stops without a checkpoint and recovers from its WAL on start. */
async function restartPostgres(pg: PostgresServer): Promise<void> {
  const bins = findPostgresBinaries();
  if (bins === undefined) throw new Error("pg_ctl not found");
  const args = ["restart", "-D", pg.dataDir, "-m", "immediate", "-w", "-t", String(PG_RESTART_TIMEOUT_MS / 1000), "-l", pg.logFile];
  // As root, PostgreSQL runs as the postgres user (libs/testing's servers.ts starts it so).
  const [file, argv] = isRoot() ? ["runuser", ["-u", "postgres", "--", bins.pgCtl, ...args]] : [bins.pgCtl, args];
  await new Promise<void>((resolve, reject) => {
    const p = spawn(file, argv, { cwd: "/", stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr?.on("data", (b: Buffer) => (err += b.toString()));
    p.once("error", reject);
    p.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl restart failed (exit ${code}): ${err.trim()}`))));
  });
}
