/** Shared benchmark plumbing: real PostgreSQL + NATS (env URLs or private servers), child processes, autocannon. */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import postgres from "postgres";
import { SERVICES } from "@treasury/contracts";
import { migrateAll } from "@treasury/service-kit";
import { freePort, makeScratchDir, repoRoot, startNats, startPostgres } from "@treasury/testing";

/** The ledger's V8 flags as deployed (k8s/base/ledger.yaml NODE_OPTIONS): benchmarks run it the same way. */
export const LEDGER_NODE_OPTIONS = "--max-semi-space-size=64";
/** The gateway's V8 flags as deployed (k8s/base/gateway.yaml); BENCH_GATEWAY_NODE_OPTIONS overrides them ("" for none). */
export const GATEWAY_NODE_OPTIONS = process.env.BENCH_GATEWAY_NODE_OPTIONS ?? "--max-semi-space-size=64";

/** A child's NODE_OPTIONS entry, or nothing when the flags are empty or unset. */
export function nodeOptions(flags: string | undefined): { NODE_OPTIONS?: string } {
  return flags ? { NODE_OPTIONS: flags } : {};
}

export interface BenchInfra {
  adminUrl: string;
  natsUrl: string;
  /** The private PostgreSQL's server log (absent with BENCH_DATABASE_URL). */
  pgLogFile?: string;
  stop(): Promise<void>;
}

export async function startInfra(): Promise<BenchInfra> {
  const stops: (() => Promise<void>)[] = [];
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let natsUrl = process.env.BENCH_NATS_URL;
  const dir = makeScratchDir("treasury-bench-");
  let pgLogFile: string | undefined;
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
  }
  await migrateAll({ adminUrl, rootDir: repoRoot(), services: SERVICES });
  return { adminUrl, natsUrl, ...(pgLogFile !== undefined ? { pgLogFile } : {}), stop: async () => { for (const s of stops.reverse()) await s(); } };
}

export function adminSql(url: string) {
  return postgres(url, { max: 2, onnotice: () => {} });
}

export interface Child {
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Start `node --import tsx <file>`; resolves once `readyUrl` answers 200 (or the line `listening <port>`). */
export async function startChild(file: string, env: Record<string, string>, readyUrl?: string): Promise<Child & { port?: number }> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the child processes.
  const extraArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const proc = spawn(process.execPath, [...extraArgs, "--import", "tsx", file], { cwd: repoRoot(), env: { ...process.env, LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "inherit"] });
  let port: number | undefined;
  const listening = new Promise<void>((resolve) => {
    proc.stdout?.on("data", (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) {
        port = Number(m[1]);
        resolve();
      }
    });
  });
  const deadline = Date.now() + 60_000;
  if (readyUrl) {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`${file} not ready`);
      const ok = await fetch(readyUrl).then((r) => r.ok, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } else {
    await Promise.race([listening, new Promise((_, rej) => setTimeout(() => rej(new Error(`${file} did not listen`)), 60_000))]);
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill("SIGTERM");
      setTimeout(() => proc.kill("SIGKILL"), 15_000).unref();
    });
  return port === undefined ? { proc, stop } : { proc, stop, port };
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / 100;
  } catch {
    return 0;
  }
}

/** CPU time (ms) used so far by every live process whose command name is `comm` (e.g. "postgres"). */
export function cpuMsByName(comm: string): number {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (name === comm) total += cpuMs(Number(pid));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

export async function load(opts: { url: string; headers?: Record<string, string>; connections: number; durationSec: number; overallRate?: number; method?: "GET" | "POST"; body?: string }): Promise<LoadResult> {
  const r = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.durationSec,
    headers: opts.headers ?? {},
    method: opts.method ?? "GET",
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.overallRate !== undefined ? { overallRate: opts.overallRate } : {}),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, total: r.requests.total };
}
