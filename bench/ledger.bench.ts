/**
 * npm run bench:ledger — the posting engine (`svc.ledger.post` over NATS, the ledger as its own process)
 * against pgbench TPC-B on the same PostgreSQL (fsync on) in the same run.
 *
 * Profiles: "uniform" transfers between random pairs of 10,000 pre-funded wallets; "hot" does the same and
 * also credits platform_revenue in every posting (the system account every sale touches). Then the pgbench
 * baseline (bench/lib.ts pgbenchBaseline) and the invariant checker. Last line: one JSON object of the figures,
 * with `errors`: every request that failed (an error reply or no reply), warm-up included.
 *
 * pgbench's clients are database connections. The ledger's closed-loop clients reach PostgreSQL through its pool
 * of BENCH_DB_POOL_MAX connections, so pgbench runs at 1, 4 and 16 clients and at that pool size (the levels of the
 * gateway benchmarks, up to the most connections the ledger itself may use), at a scale of at least the most
 * clients, and its best level is the baseline.
 * Where the machine runs them, it also prints the CPU time each committed posting cost the ledger process,
 * PostgreSQL (all its processes), this client, and everything else (busy time minus those three): on a
 * shared machine these are steadier than the throughput figures.
 *
 * Knobs (environment): BENCH_CLIENTS (256 closed-loop clients), BENCH_DURATION_SEC (12 per profile),
 * BENCH_WARMUP_SEC (2), BENCH_PGBENCH_SEC (15 per pgbench level), BENCH_WALLETS (10,000), BENCH_DB_POOL_MAX (20),
 * BENCH_BATCH_SLOTS (the ledger's POST_BATCH_SLOTS), BENCH_DATABASE_URL / BENCH_NATS_URL (see lib.ts).
 * Results and the engine decisions they led to: docs/adr/0004-hot-accounts.md.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { connect, createInbox, type NatsConnection } from "@nats-io/transport-node";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import { adminSql, pgbenchBaseline, pgbenchLine, pgbenchRunner, startInfra } from "./lib.ts";
import { cpuMs, LEDGER_NODE_OPTIONS, startChild, type Child } from "./lib/processes.ts";

const WALLETS = Number(process.env.BENCH_WALLETS ?? 10_000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 256);
const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 12);
const WARMUP_SEC = Number(process.env.BENCH_WARMUP_SEC ?? 2);
const PGBENCH_SEC = Number(process.env.BENCH_PGBENCH_SEC ?? 15);
const FUNDING_CENTS = 10_000_000;
const FUNDING_PER_POST = 50;
const RPC_TIMEOUT_MS = 30_000;
const DB_POOL_MAX = Number(process.env.BENCH_DB_POOL_MAX ?? 20);
/** pgbench's client levels: those of the gateway benchmarks below the ledger's pool, and the pool's size itself. */
const PGBENCH_LEVELS = [...[1, 4, 16].filter((n) => n < DB_POOL_MAX), DB_POOL_MAX];

interface Reply {
  ok: boolean;
  error?: { code: string; message: string };
}

/**
 * A lean request/reply client, so the load generator stays a small share of the machine it shares with the
 * ledger (pgbench's client is C): one subscription for all replies, one timer sweep for timeouts, and a
 * successful reply recognised by its first bytes instead of being decoded. nc.request would, on top of the
 * same messages, allocate a stack-captured error per request (nats.js rejects each finished request's
 * deferred with a new RequestError) and parse every reply body.
 */
class Requester {
  private readonly nc: NatsConnection;
  private readonly prefix = `${createInbox()}.`;
  private readonly pending = new Map<string, { resolve: (r: Reply) => void; reject: (e: Error) => void; at: number }>();
  private seq = 0;
  private readonly sweep: NodeJS.Timeout;

  constructor(nc: NatsConnection) {
    this.nc = nc;
    nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => {
        if (err !== null) return;
        const id = msg.subject.slice(this.prefix.length);
        const p = this.pending.get(id);
        if (p === undefined) return;
        this.pending.delete(id);
        if (msg.data.length === 0) p.reject(new Error("no responders"));
        else p.resolve(startsWith(msg.data, OK_PREFIX) ? OK_REPLY : msg.json<Reply>());
      },
    });
    this.sweep = setInterval(() => {
      const limit = performance.now() - RPC_TIMEOUT_MS;
      for (const [id, p] of this.pending) {
        if (p.at > limit) continue;
        this.pending.delete(id);
        p.reject(new Error("timeout"));
      }
    }, 1000);
  }

  request(subject: string, payload: unknown): Promise<Reply> {
    const id = (++this.seq).toString(36);
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, at: performance.now() });
      this.nc.publish(subject, JSON.stringify(payload), { reply: this.prefix + id });
    });
  }

  close(): void {
    clearInterval(this.sweep);
  }
}

/** What the kit's RpcServer sends for a success (JSON.stringify of `{ ok: true, status, body }`). */
const OK_PREFIX = new TextEncoder().encode('{"ok":true,');
const OK_REPLY: Reply = { ok: true };

function startsWith(data: Uint8Array, prefix: Uint8Array): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

let requester: Requester | undefined;

async function request(nc: NatsConnection, payload: unknown): Promise<Reply> {
  requester ??= new Requester(nc);
  return requester.request("svc.ledger.post", payload);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

interface ProfileResult {
  postings_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  error_codes: Record<string, number>;
  /** CPU time per committed posting (µs) by process group, when this machine runs them (Linux /proc). */
  cpu_us: CpuPerPosting | undefined;
}

interface CpuPerPosting {
  ledger: number;
  postgres: number;
  client: number;
  /** Everything else the machine ran meanwhile (NATS, other agents' work): busy time minus the three above. */
  other: number;
  machine_busy_pct: number;
}

/** Busy CPU time of the whole machine so far (ms), from /proc/stat; 0 where unavailable. */
function machineBusyMs(): number {
  try {
    const f = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return ((total - (f[3] ?? 0) - (f[4] ?? 0)) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** CPU time (ms) of every process whose parent is `ppid` (PostgreSQL's backends and auxiliary processes). */
function childrenCpuMs(ppid: number | undefined): number {
  if (ppid === undefined) return 0;
  let ms = 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === ppid) ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      // the process ended meanwhile
    }
  }
  return ms;
}

interface CpuSnapshot {
  ledger: number;
  postgres: number;
  client: number;
  machine: number;
  at: number;
}

let ledgerPid: number | undefined;
let postmasterPid: number | undefined;

function cpuSnapshot(): CpuSnapshot {
  const c = process.cpuUsage();
  return {
    ledger: cpuMs(ledgerPid),
    postgres: childrenCpuMs(postmasterPid),
    client: (c.user + c.system) / 1000,
    machine: machineBusyMs(),
    at: performance.now(),
  };
}

function cpuPerPosting(a: CpuSnapshot, b: CpuSnapshot, postings: number): CpuPerPosting | undefined {
  if (postings === 0 || b.machine === 0) return undefined;
  const us = (ms: number): number => Math.round((ms * 1000) / postings);
  const ledger = b.ledger - a.ledger;
  const postgres = b.postgres - a.postgres;
  const client = b.client - a.client;
  const machine = b.machine - a.machine;
  return {
    ledger: us(ledger),
    postgres: us(postgres),
    client: us(client),
    other: us(Math.max(0, machine - ledger - postgres - client)),
    machine_busy_pct: Math.round((100 * machine) / ((b.at - a.at) * CORES)),
  };
}

const CORES = (() => {
  try {
    return (
      readFileSync("/proc/cpuinfo", "utf8")
        .split("\n")
        .filter((l) => l.startsWith("processor")).length || 1
    );
  } catch {
    return 1;
  }
})();

let refSeq = 0;
const runId = randomBytes(4).toString("hex");

function transferRequest(orgId: string, walletIds: readonly string[], hot: boolean): unknown {
  const a = Math.floor(Math.random() * walletIds.length);
  let b = Math.floor(Math.random() * (walletIds.length - 1));
  if (b >= a) b++;
  const from = walletIds[a] as string;
  const to = walletIds[b] as string;
  const amount = 1 + Math.floor(Math.random() * 100);
  const postings: { debit: Record<string, string>; credit: Record<string, string>; amount: number }[] = [
    { debit: { wallet_id: from }, credit: { wallet_id: to }, amount },
  ];
  if (hot) postings.push({ debit: { wallet_id: from }, credit: { system: "platform_revenue" }, amount: 1 });
  return { org_id: orgId, livemode: false, kind: hot ? "bench_hot" : "bench_uniform", reference_id: `b-${runId}-${++refSeq}`, postings };
}

/** CLIENTS closed-loop clients for `seconds`; only replies that came back ok (committed) count. */
async function runProfile(nc: NatsConnection, make: () => unknown, seconds: number): Promise<ProfileResult> {
  const latencies: number[] = [];
  const codes: Record<string, number> = {};
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const client = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const r = await request(nc, make());
        if (r.ok) latencies.push(performance.now() - t0);
        else {
          errors++;
          const c = r.error?.code ?? "unknown";
          codes[c] = (codes[c] ?? 0) + 1;
        }
      } catch (e) {
        errors++;
        codes[String(e)] = (codes[String(e)] ?? 0) + 1;
      }
    }
  };
  const before = cpuSnapshot();
  const started = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuPerPosting(before, cpuSnapshot(), latencies.length);
  latencies.sort((x, y) => x - y);
  return {
    postings_per_s: latencies.length / elapsed,
    p50_ms: Number(percentile(latencies, 50).toFixed(1)),
    p99_ms: Number(percentile(latencies, 99).toFixed(1)),
    errors,
    error_codes: codes,
    cpu_us: cpu,
  };
}

const t0 = Date.now();
const infra = await startInfra();
const children: Child[] = [];
let nc: NatsConnection | undefined;
const sql = adminSql(infra.adminUrl);
try {
  const orgId = `org_bench_${runId}`;
  // 10,000 transferable consumer wallets, created in one statement.
  const rows = await sql<{ id: string }[]>`
    insert into ledger.accounts (id, org_id, livemode, account_type, normal_side, name, owner_id, owner_type, transferable, topup_supported)
    select gen_random_uuid(), ${orgId}, false, 'consumer_credit', 'credit', 'bench wallet ' || g, 'bench-' || g, 'customer', true, true
    from generate_series(1, ${WALLETS}::int) g
    returning id`;
  const walletIds = rows.map((r) => r.id);

  const healthPort = await freePort();
  const env = {
    DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "ledger"),
    NATS_URL: infra.natsUrl,
    NATS_PREFIX: "",
    HEALTH_PORT: String(healthPort),
    DB_POOL_MAX: String(DB_POOL_MAX),
    RPC_CONCURRENCY_MAX: "4096",
    NODE_OPTIONS: LEDGER_NODE_OPTIONS,
    ...(process.env.BENCH_BATCH_SLOTS ? { POST_BATCH_SLOTS: process.env.BENCH_BATCH_SLOTS } : {}),
  };
  children.push(await startChild("services/ledger/src/main.ts", env, `http://127.0.0.1:${healthPort}/readyz`));
  ledgerPid = children[0]?.proc.pid;
  // PostgreSQL's backends are children of the postmaster: found from our own backend when it runs here.
  const [backend] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  try {
    const stat = readFileSync(`/proc/${backend?.pid ?? 0}/stat`, "utf8");
    postmasterPid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    postmasterPid = undefined;
  }
  // As the services connect (libs/service-kit nats.ts): no stack-capturing error object per request, which
  // would make this client, not the ledger, a large share of the machine's work.
  nc = await connect({ servers: infra.natsUrl, name: "ledger-bench", noAsyncTraces: true });
  const conn = nc;

  // Fund every wallet through the engine itself (sandbox funding, as a sandbox top-up does).
  const batches: string[][] = [];
  for (let i = 0; i < walletIds.length; i += FUNDING_PER_POST) batches.push(walletIds.slice(i, i + FUNDING_PER_POST));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < batches.length) {
        const batch = batches[next++] ?? [];
        const r = await request(conn, {
          org_id: orgId,
          livemode: false,
          kind: "bench_funding",
          reference_id: `fund-${runId}-${next}`,
          postings: batch.map((w) => ({ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: FUNDING_CENTS })),
        });
        if (!r.ok) throw new Error(`funding failed: ${JSON.stringify(r.error)}`);
      }
    }),
  );
  console.log(`setup: ${walletIds.length} wallets funded in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${CLIENTS} clients, ${DURATION_SEC} s per profile`);

  const warmUp = await runProfile(conn, () => transferRequest(orgId, walletIds, false), WARMUP_SEC);
  const uniform = await runProfile(conn, () => transferRequest(orgId, walletIds, false), DURATION_SEC);
  const hot = await runProfile(conn, () => transferRequest(orgId, walletIds, true), DURATION_SEC);

  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: PGBENCH_LEVELS, seconds: PGBENCH_SEC });
  const tps = baseline.best.tps;
  const errors = warmUp.errors + uniform.errors + hot.errors;

  const report = await checkInvariants(sql, { orgId });
  const ratio = uniform.postings_per_s / tps;
  const hotOverUniform = hot.postings_per_s / uniform.postings_per_s;
  console.log("profile        postings/s   p50 ms   p99 ms   errors");
  for (const [name, r] of [
    ["uniform", uniform],
    ["hot", hot],
  ] as const) {
    console.log(
      `${name.padEnd(14)} ${r.postings_per_s.toFixed(0).padStart(10)} ${String(r.p50_ms).padStart(8)} ${String(r.p99_ms).padStart(8)} ${String(r.errors).padStart(8)}${r.errors > 0 ? ` ${JSON.stringify(r.error_codes)}` : ""}`,
    );
  }
  for (const [name, r] of [
    ["uniform", uniform],
    ["hot", hot],
  ] as const) {
    const c = r.cpu_us;
    if (c !== undefined)
      console.log(
        `${name} CPU per posting (µs): ledger ${c.ledger}, postgres ${c.postgres}, client ${c.client}, other ${c.other}; machine ${c.machine_busy_pct} % busy`,
      );
  }
  console.log(pgbenchLine(baseline));
  console.log(`ratio uniform/pgbench = ${ratio.toFixed(2)} (target ≥ 2.0); hot/uniform = ${hotOverUniform.toFixed(2)} (target ≥ 0.8)`);
  console.log(`invariants: ${report.ok ? "ok" : JSON.stringify(report.violations.slice(0, 5))}; total ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  console.log(
    JSON.stringify({
      uniform_postings_per_s: Math.round(uniform.postings_per_s),
      hot_postings_per_s: Math.round(hot.postings_per_s),
      pgbench_tps: Math.round(tps),
      pgbench: baseline.json(),
      ratio: Number(ratio.toFixed(2)),
      hot_over_uniform: Number(hotOverUniform.toFixed(2)),
      p99_ms: Math.max(uniform.p99_ms, hot.p99_ms),
      errors,
      invariants: report.ok ? "ok" : "violated",
      cpu_us_per_posting: { uniform: uniform.cpu_us, hot: hot.cpu_us },
    }),
  );
  if (!report.ok) process.exitCode = 1;
} finally {
  requester?.close();
  await nc?.close();
  await sql.end({ timeout: 5 });
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
