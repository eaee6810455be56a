/**
 * Shared benchmark plumbing: real PostgreSQL + NATS, and Redis for the gateway (env URLs or private servers),
 * autocannon, the open-loop client, the pgbench baseline, and the loops that drive a benchmark's own operations.
 * The benchmarked child processes and their CPU figures are in lib/processes.ts.
 */
import { availableParallelism } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import postgres from "postgres";
import { SERVICES } from "@treasury/contracts";
import { migrateAll, migrateEventsStream } from "@treasury/service-kit";
import { freePort, makeScratchDir, repoRoot, startNats, startPostgres, startRedis } from "@treasury/testing";
import { runCommand } from "./lib/command.ts";
import { GetPool } from "./lib/http-pool.ts";

export interface BenchInfra {
  adminUrl: string;
  natsUrl: string;
  /** The private nats-server's pid (absent with BENCH_NATS_URL). */
  natsPid?: number;
  /** The private PostgreSQL's server log (absent with BENCH_DATABASE_URL). */
  pgLogFile?: string;
  /** Redis for the gateway's rate limits, when asked for (`startInfra({ redis: true })`). */
  redisUrl?: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL (fsync on) and NATS, private or from BENCH_DATABASE_URL / BENCH_NATS_URL, migrated. With `redis`, also
 * a Redis (private, keeping nothing on disk as deployed, or BENCH_REDIS_URL) for a gateway (`deployedGatewayEnv`).
 */
export async function startInfra(opts: { redis?: boolean } = {}): Promise<BenchInfra> {
  const stops: (() => Promise<void>)[] = [];
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let natsUrl = process.env.BENCH_NATS_URL;
  let redisUrl = opts.redis ? process.env.BENCH_REDIS_URL : undefined;
  const dir = makeScratchDir("treasury-bench-");
  let pgLogFile: string | undefined;
  let natsPid: number | undefined;
  if (!adminUrl) {
    // fsync stays on: the benchmark measures durable commits, like pgbench does.
    const pg = await startPostgres({ dataDir: join(dir, "pg"), port: await freePort(), maxConnections: 200, fsync: true });
    stops.push(pg.stop);
    adminUrl = pg.url;
    pgLogFile = pg.logFile;
  }
  if (!natsUrl) {
    const nats = await startNats({ storeDir: join(dir, "nats"), port: await freePort() });
    stops.push(nats.stop);
    natsUrl = nats.url;
    natsPid = nats.pid;
  }
  if (opts.redis && !redisUrl) {
    const redis = await startRedis({ port: await freePort() });
    stops.push(redis.stop);
    redisUrl = redis.url;
  }
  await migrateAll({ adminUrl, rootDir: repoRoot(), services: SERVICES });
  // The migrate step creates the EVENTS stream; services only wait for it (ADR 0011).
  await migrateEventsStream({ url: natsUrl, name: "bench-migrate" }, "");
  return {
    adminUrl,
    natsUrl,
    ...(natsPid !== undefined ? { natsPid } : {}),
    ...(pgLogFile !== undefined ? { pgLogFile } : {}),
    ...(redisUrl !== undefined ? { redisUrl } : {}),
    stop: async () => {
      for (const s of stops.reverse()) await s();
    },
  };
}

/**
 * The gateway's environment for rate limits as deployed (k8s/base/gateway.yaml sets REDIS_URL): buckets in Redis,
 * one script call per limited request, not the in-process buckets a gateway without REDIS_URL falls back to.
 */
export function deployedGatewayEnv(infra: BenchInfra): { REDIS_URL: string } {
  if (infra.redisUrl === undefined) throw new Error("the gateway runs with Redis as deployed: start the infrastructure with startInfra({ redis: true })");
  return { REDIS_URL: infra.redisUrl };
}

export function adminSql(url: string) {
  return postgres(url, { max: 2, onnotice: () => {} });
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
  /** How long the run took. */
  seconds: number;
}

export async function load(opts: {
  url: string;
  headers?: Record<string, string>;
  connections: number;
  durationSec: number;
  overallRate?: number;
  method?: "GET" | "POST";
  body?: string;
}): Promise<LoadResult> {
  const r = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.durationSec,
    headers: opts.headers ?? {},
    method: opts.method ?? "GET",
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.overallRate !== undefined ? { overallRate: opts.overallRate } : {}),
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    total: r.requests.total,
    seconds: r.duration,
  };
}

/** The p-th percentile of ascending values (0 for none). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** An open-loop run: its figures and every successful request's latency (ms, ascending). */
export interface PacedResult extends LoadResult {
  latencies: number[];
}

/** Several open-loop runs as one: requests over their summed time, percentiles over all their latencies. */
export function mergePaced(runs: PacedResult[]): PacedResult {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const sum = (f: (r: PacedResult) => number) => runs.reduce((acc, r) => acc + f(r), 0);
  const seconds = sum((r) => r.seconds);
  return {
    rps: latencies.length / Math.max(1e-9, seconds),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors: sum((r) => r.errors),
    non2xx: sum((r) => r.non2xx),
    total: sum((r) => r.total),
    seconds,
    latencies,
  };
}

/**
 * Open loop at an even rate: request i is due at start + i/rate and is sent at the first 1 ms tick after that,
 * whatever earlier answers do, so a slow answer cannot hold the next requests back (no coordinated omission). autocannon's overallRate cannot do this:
 * each connection sends its quota for the second as fast as it can and then waits for the next second, so its
 * "half rate" is full-speed bursts, and it corrects for omission with an interval of ceil(1 / rate) = 1 ms.
 * GET requests go out on up to `connections` keep-alive sockets (a due request waits for a free one, and that
 * wait counts), written and parsed by hand as autocannon does (lib/http-pool.ts): node:http's client costs about
 * twice the CPU per request, and its own event-loop delay would show up as the server's latency. One second of the
 * same load is sent first and not measured (sockets, JIT). `timeline` prints latency per 500 ms.
 */
export async function pacedLoad(opts: PacedLoadOptions): Promise<PacedResult> {
  const pool = new GetPool(new URL(opts.url), opts.headers ?? {}, opts.connections);
  try {
    await pacedRun(pool, opts, 1);
    return await pacedRun(pool, opts, opts.durationSec);
  } finally {
    pool.destroy();
  }
}

export interface PacedLoadOptions {
  url: string;
  headers?: Record<string, string>;
  rate: number;
  durationSec: number;
  connections: number;
  timeline?: boolean;
}

/** One open-loop run of `seconds` at `opts.rate` on the pool's sockets. */
function pacedRun(pool: GetPool, opts: PacedLoadOptions, seconds: number): Promise<PacedResult> {
  return new Promise<PacedResult>((resolve) => {
    const latencies: number[] = [];
    const timeline: [number, number][] | undefined = opts.timeline ? [] : undefined;
    const lags: number[] = [];
    const cpu0 = process.cpuUsage();
    let [errors, non2xx, sent, done] = [0, 0, 0, 0];
    const total = Math.max(1, Math.floor(opts.rate * seconds));
    const startedAt = performance.now();
    const finish = () => {
      const elapsed = (performance.now() - startedAt) / 1000;
      latencies.sort((a, b) => a - b);
      if (timeline) printClientTimeline(timeline, lags, cpu0, done);
      resolve({
        rps: latencies.length / elapsed,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        errors,
        non2xx,
        total: done,
        seconds: elapsed,
        latencies,
      });
    };
    // Every millisecond, send what has come due since the last tick, each timed from then (a wait for a free
    // connection counts; the timer's own lateness, printed with `timeline`, does not).
    const tick = () => {
      const now = performance.now();
      if (sent < total) lags.push(now - (startedAt + (sent * 1000) / opts.rate));
      while (sent < total && startedAt + (sent * 1000) / opts.rate <= now) {
        sent++;
        pool.send((status) => {
          done++;
          if (status === 0) errors++;
          else if (status < 200 || status >= 300) non2xx++;
          else {
            const ms = performance.now() - now;
            latencies.push(ms);
            if (timeline) timeline.push([now - startedAt, ms]);
          }
          if (done === total) finish();
        });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

/** A run's latency per 500 ms, and how late the client itself sent and what it cost per request. */
function printClientTimeline(timeline: [number, number][], lags: number[], cpu0: NodeJS.CpuUsage, done: number): void {
  console.log(`  latency per 500 ms (start, requests, p50/p99/max ms): ${latencyTimeline(timeline).join(" | ")}`);
  lags.sort((a, b) => a - b);
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `  load client: sends late by p50 ${percentile(lags, 50).toFixed(1)} / p99 ${percentile(lags, 99).toFixed(1)} ms; ${((cpu.user + cpu.system) / done).toFixed(0)} µs CPU per request`,
  );
}

/** Latency by 500 ms of start time, as `offset count p50/p99/max` entries (ms): where a tail comes from. */
export function latencyTimeline(timeline: [number, number][]): string[] {
  const buckets = new Map<number, number[]>();
  for (const [at, ms] of timeline) {
    const b = Math.floor(at / 500);
    let xs = buckets.get(b);
    if (xs === undefined) buckets.set(b, (xs = []));
    xs.push(ms);
  }
  return [...buckets]
    .sort((x, y) => x[0] - y[0])
    .map(([b, xs]) => {
      xs.sort((x, y) => x - y);
      return `${(b / 2).toFixed(1)}s ${xs.length} ${percentile(xs, 50).toFixed(1)}/${percentile(xs, 99).toFixed(0)}/${(xs.at(-1) ?? 0).toFixed(0)}`;
    });
}

/** One level of a pgbench sweep: its clients (`-c`), threads (`-j`) and transactions per second. */
export interface PgbenchLevel {
  clients: number;
  threads: number;
  tps: number;
}

/**
 * One pgbench TPC-B run (the default script) on a database initialised afresh at `scale`: the runner of
 * `pgbenchBaseline`, a parameter so the choice of scale and levels can be tested without PostgreSQL.
 */
export type PgbenchRun = (opts: { scale: number; clients: number; threads: number; seconds: number }) => Promise<number>;

/**
 * How pgbench runs beside a benchmark whose own clients run at `levels`: the same client levels (ascending, each
 * once), at a scale of at least the most clients. pgbench's documentation asks for scale ≥ clients: TPC-B
 * updates one of `scale` branch rows in every transaction, so with more clients than branches they queue on
 * those rows' locks, pgbench measures that contention instead of the machine, and a baseline lowered that way
 * flatters every ratio to it.
 */
export function pgbenchPlan(levels: readonly number[]): { scale: number; levels: number[] } {
  if (levels.length === 0) throw new Error("pgbench needs at least one client level");
  for (const n of levels) if (!Number.isInteger(n) || n < 1) throw new Error(`pgbench client level ${n} is not a positive integer`);
  const sorted = [...new Set(levels)].sort((a, b) => a - b);
  return { scale: sorted.at(-1) ?? 1, levels: sorted };
}

/** pgbench's threads (`-j`) for `clients`: one per core, and never more than the clients (pgbench's own limit). */
export function pgbenchThreads(clients: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, clients));
}

/** The level with the most tps (of equals, the one with fewer clients). */
export function bestPgbenchLevel(levels: readonly PgbenchLevel[]): PgbenchLevel {
  const best = levels.reduce<PgbenchLevel | undefined>((a, b) => (a === undefined || b.tps > a.tps ? b : a), undefined);
  if (best === undefined) throw new Error("no pgbench levels");
  return best;
}

/** A benchmark's pgbench baseline: how it ran, each level's tps, and the best level, which is the baseline. */
export interface PgbenchBaseline {
  scale: number;
  seconds: number;
  levels: PgbenchLevel[];
  best: PgbenchLevel;
  /**
   * pgbench again at the best level, initialised afresh: a round's baseline, measured seconds beside the round's
   * own figures (the machine's speed drifts between the sweep and a round).
   */
  again(): Promise<PgbenchLevel>;
  /** The baseline's details for a benchmark's JSON line. */
  json(): { scale: number; seconds: number; best_clients: number; tps_by_clients: Record<string, number> };
}

/**
 * THE pgbench baseline of every benchmark that compares with PostgreSQL: TPC-B at each of the benchmark's own
 * client levels (`pgbenchPlan`: scale ≥ the most clients), initialised afresh before every run, and the best
 * level counts, as the benchmark's own best level does for its figure. `levels` are the clients the benchmark
 * itself runs against the system, so pgbench gets the same chance to find its best concurrency on this machine.
 */
export async function pgbenchBaseline(run: PgbenchRun, opts: { levels: readonly number[]; seconds: number; cores?: number }): Promise<PgbenchBaseline> {
  const plan = pgbenchPlan(opts.levels);
  const at = async (clients: number): Promise<PgbenchLevel> => {
    const threads = pgbenchThreads(clients, opts.cores);
    return { clients, threads, tps: await run({ scale: plan.scale, clients, threads, seconds: opts.seconds }) };
  };
  // One level after the other: levels run side by side would measure each other.
  const levels: PgbenchLevel[] = [];
  for (const clients of plan.levels) levels.push(await at(clients));
  const best = bestPgbenchLevel(levels);
  return {
    scale: plan.scale,
    seconds: opts.seconds,
    levels,
    best,
    again: () => at(best.clients),
    json: () => ({
      scale: plan.scale,
      seconds: opts.seconds,
      best_clients: best.clients,
      tps_by_clients: Object.fromEntries(levels.map((l) => [String(l.clients), Number(l.tps.toFixed(1))])),
    }),
  };
}

/** The baseline's sweep as one line: scale, then tps by clients with the best marked. */
export function pgbenchLine(b: PgbenchBaseline): string {
  const levels = b.levels.map((l) => `${l.clients}${l === b.best ? "*" : ""}: ${l.tps.toFixed(1)}`).join(", ");
  return `pgbench TPC-B at scale ${b.scale}, ${b.seconds} s per level, tps by clients (* best): ${levels}`;
}

/**
 * pgbench against its own database (`database`, "pgbench" unless named, created afresh) in the benchmark's cluster. Each run initialises
 * it at `scale` (then a CHECKPOINT, so the load of the initialisation is flushed before anything is measured): a
 * run on tables that earlier runs grew and left dead rows in measured 10–20 % less by the third round, which
 * would flatter the ratio of later rounds and penalise later levels of a sweep. The commands run beside the event
 * loop (bench/lib/command.ts): the benchmark's keep-alive sockets outlive a sweep only if the loop keeps turning.
 */
export function pgbenchRunner(adminUrl: string, database = "pgbench"): PgbenchRun {
  const u = new URL(adminUrl);
  const conn = ["-h", u.hostname, "-p", u.port || "5432", "-U", decodeURIComponent(u.username || "postgres")];
  const env = { ...process.env, PGPASSWORD: decodeURIComponent(u.password) };
  const exec = (cmd: string, args: string[], seconds: number) => runCommand(cmd, [...conn, ...args], { env, timeoutMs: (seconds + 300) * 1000 });
  let created: Promise<unknown> | undefined;
  return async ({ scale, clients, threads, seconds }) => {
    const db = `"${database.replaceAll('"', '""')}"`;
    await (created ??= exec("psql", ["-d", "postgres", "-c", `drop database if exists ${db}`, "-c", `create database ${db}`], 0));
    await exec("pgbench", ["-i", "-q", "-s", String(scale), database], 0);
    await exec("psql", ["-d", database, "-c", "checkpoint"], 0);
    const out = await exec("pgbench", ["-c", String(clients), "-j", String(threads), "-T", String(seconds), database], seconds);
    const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(out) ?? /tps = ([\d.]+)/.exec(out);
    if (m === null) throw new Error(`no tps in pgbench output:\n${out}`);
    return Number(m[1]);
  };
}

/** A benchmark's JSON POST through the gateway: the status and the parsed body. */
export type BenchPost = (path: string, body: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

/**
 * The floor of a money path through the gateway: what any payout or refund must at least do, and nothing else.
 * One authenticated write answered after one ledger posting touching a creator's wallet (a 1-cent transfer within
 * the n-th fixed pair of creators: no two pairs share a wallet), with no intent, settle or events of its own.
 * Answers its latency in ms, or throws.
 */
export async function floorTransfer(post: BenchPost, creators: readonly string[], n: number): Promise<number> {
  const pair = n % Math.floor(creators.length / 2);
  const t0 = performance.now();
  const r = await post("/v1/transfers", {
    from_participant_id: creators[2 * pair],
    to_participant_id: creators[2 * pair + 1],
    amount: 1,
    reference_id: `bench_floor_${n}`,
  });
  if (r.status !== 201) throw new Error(`transfer ${r.status}: ${JSON.stringify(r.body)}`);
  return performance.now() - t0;
}

/** A run of a benchmark's own operation: how many succeeded, how many failed, the rate and latencies (ms). */
export interface OpRun {
  /** Clients sending back to back (closed loop), or 0 (open loop). */
  concurrency: number;
  count: number;
  errors: number;
  perSec: number;
  p50: number;
  p99: number;
}

/** One operation of a benchmark: its latency in ms, or throws. */
export type BenchOp = () => Promise<number>;

/** Closed loop: `concurrency` clients each send `op` back to back for `seconds`. The first error is printed. */
export async function closedLoop(op: BenchOp, concurrency: number, seconds: number): Promise<OpRun> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: unknown;
  const startedAt = performance.now();
  const until = startedAt + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        try {
          latencies.push(await op());
        } catch (e) {
          errors++;
          firstError ??= e;
        }
      }
    }),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  if (firstError !== undefined)
    console.log(`  (${errors} errors at concurrency ${concurrency}; first: ${firstError instanceof Error ? firstError.message : String(firstError)})`);
  latencies.sort((a, b) => a - b);
  return { concurrency, count: latencies.length, errors, perSec: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/**
 * Open loop: operation i starts at start + i/rate whatever earlier ones do (a late start goes at once), so a slow
 * answer cannot hold the next ones back; latency counts from each one's start. `onLatency` sees each success with
 * its start offset (ms), for a timeline.
 */
export async function openLoop(op: BenchOp, rate: number, seconds: number, onLatency?: (atMs: number, ms: number) => void): Promise<OpRun & { rate: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const inflight = new Set<Promise<void>>();
  const startedAt = performance.now();
  const intervalMs = 1000 / rate;
  for (let n = 0; performance.now() - startedAt < seconds * 1000; n++) {
    const wait = startedAt + n * intervalMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const at = performance.now() - startedAt;
    const p: Promise<void> = op()
      .then(
        (ms) => {
          latencies.push(ms);
          onLatency?.(at, ms);
        },
        () => void (errors += 1),
      )
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all([...inflight]);
  const elapsed = (performance.now() - startedAt) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rate,
    concurrency: 0,
    count: latencies.length,
    errors,
    perSec: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** The median element of a benchmark's rounds by `key` (the upper one of an even count). */
export function medianBy<T>(xs: readonly T[], key: (x: T) => number): T {
  const sorted = [...xs].sort((a, b) => key(a) - key(b));
  const m = sorted[Math.floor(sorted.length / 2)];
  if (m === undefined) throw new Error("no rounds");
  return m;
}
