/**
 * npm run bench:ledger — the posting engine (`svc.ledger.post` over NATS, the ledger as its own process)
 * against pgbench TPC-B on the same PostgreSQL (fsync on) in the same run.
 *
 * Profiles: "uniform" transfers between random pairs of 10,000 pre-funded wallets; "hot" does the same and
 * also credits platform_revenue in every posting (the system account every sale touches). Then pgbench
 * (`-i -s 10`, `-c 8 -j 2 -T 15`) and the invariant checker. Last line: one JSON object of the figures.
 *
 * Knobs (environment): BENCH_CLIENTS (256 closed-loop clients), BENCH_DURATION_SEC (12 per profile),
 * BENCH_WARMUP_SEC (2), BENCH_PGBENCH_SEC (15), BENCH_WALLETS (10,000), BENCH_DB_POOL_MAX (20),
 * BENCH_BATCH_SLOTS (the ledger's POST_BATCH_SLOTS), BENCH_DATABASE_URL / BENCH_NATS_URL (see lib.ts).
 * Results and the engine decisions they led to: docs/adr/0004-hot-accounts.md.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { checkInvariants } from "../services/ledger/src/invariants.ts";
import { adminSql, startChild, startInfra, type Child } from "./lib.ts";

const WALLETS = Number(process.env.BENCH_WALLETS ?? 10_000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 256);
const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 12);
const WARMUP_SEC = Number(process.env.BENCH_WARMUP_SEC ?? 2);
const PGBENCH_SEC = Number(process.env.BENCH_PGBENCH_SEC ?? 15);
const FUNDING_CENTS = 10_000_000;
const FUNDING_PER_POST = 50;
const RPC_TIMEOUT_MS = 30_000;
const PGBENCH = process.env.PGBENCH ?? "/usr/bin/pgbench";

interface Reply {
  ok: boolean;
  error?: { code: string; message: string };
}

async function request(nc: NatsConnection, payload: unknown): Promise<Reply> {
  const msg = await nc.request("svc.ledger.post", JSON.stringify(payload), { timeout: RPC_TIMEOUT_MS });
  return msg.json<Reply>();
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
}

let refSeq = 0;
const runId = randomBytes(4).toString("hex");

function transferRequest(orgId: string, walletIds: readonly string[], hot: boolean): unknown {
  const a = Math.floor(Math.random() * walletIds.length);
  let b = Math.floor(Math.random() * (walletIds.length - 1));
  if (b >= a) b++;
  const from = walletIds[a] as string;
  const to = walletIds[b] as string;
  const amount = 1 + Math.floor(Math.random() * 100);
  const postings: { debit: Record<string, string>; credit: Record<string, string>; amount: number }[] = [{ debit: { wallet_id: from }, credit: { wallet_id: to }, amount }];
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
  const started = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((x, y) => x - y);
  return {
    postings_per_s: latencies.length / elapsed,
    p50_ms: Number(percentile(latencies, 50).toFixed(1)),
    p99_ms: Number(percentile(latencies, 99).toFixed(1)),
    errors,
    error_codes: codes,
  };
}

function runPgbench(url: string): number {
  const init = spawnSync(PGBENCH, ["-i", "-s", "10", "-q", url], { encoding: "utf8", timeout: 120_000 });
  if (init.status !== 0) throw new Error(`pgbench -i failed: ${init.stderr}`);
  const run = spawnSync(PGBENCH, ["-c", "8", "-j", "2", "-T", String(PGBENCH_SEC), url], { encoding: "utf8", timeout: (PGBENCH_SEC + 60) * 1000 });
  if (run.status !== 0) throw new Error(`pgbench failed: ${run.stderr}`);
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(run.stdout) ?? /tps = ([\d.]+)/.exec(run.stdout);
  if (m === null) throw new Error(`pgbench output without tps: ${run.stdout}`);
  return Number(m[1]);
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
    DB_POOL_MAX: process.env.BENCH_DB_POOL_MAX ?? "20",
    RPC_CONCURRENCY_MAX: "4096",
    ...(process.env.BENCH_BATCH_SLOTS ? { POST_BATCH_SLOTS: process.env.BENCH_BATCH_SLOTS } : {}),
  };
  children.push(await startChild("services/ledger/src/main.ts", env, `http://127.0.0.1:${healthPort}/readyz`));
  nc = await connect({ servers: infra.natsUrl, name: "ledger-bench" });
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

  await runProfile(conn, () => transferRequest(orgId, walletIds, false), WARMUP_SEC);
  const uniform = await runProfile(conn, () => transferRequest(orgId, walletIds, false), DURATION_SEC);
  const hot = await runProfile(conn, () => transferRequest(orgId, walletIds, true), DURATION_SEC);

  await sql`create database pgbench`;
  const pgUrl = new URL(infra.adminUrl);
  pgUrl.pathname = "/pgbench";
  const tps = runPgbench(pgUrl.toString());

  const report = await checkInvariants(sql, { orgId });
  const ratio = uniform.postings_per_s / tps;
  const hotOverUniform = hot.postings_per_s / uniform.postings_per_s;
  console.log("profile        postings/s   p50 ms   p99 ms   errors");
  for (const [name, r] of [["uniform", uniform], ["hot", hot]] as const) {
    console.log(`${name.padEnd(14)} ${r.postings_per_s.toFixed(0).padStart(10)} ${String(r.p50_ms).padStart(8)} ${String(r.p99_ms).padStart(8)} ${String(r.errors).padStart(8)}${r.errors > 0 ? ` ${JSON.stringify(r.error_codes)}` : ""}`);
  }
  console.log(`pgbench TPC-B -s 10 -c 8 -j 2 -T ${PGBENCH_SEC}: ${tps.toFixed(0)} tps`);
  console.log(`ratio uniform/pgbench = ${ratio.toFixed(2)} (target ≥ 2.0); hot/uniform = ${hotOverUniform.toFixed(2)} (target ≥ 0.8)`);
  console.log(`invariants: ${report.ok ? "ok" : JSON.stringify(report.violations.slice(0, 5))}; total ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  console.log(
    JSON.stringify({
      uniform_postings_per_s: Math.round(uniform.postings_per_s),
      hot_postings_per_s: Math.round(hot.postings_per_s),
      pgbench_tps: Math.round(tps),
      ratio: Number(ratio.toFixed(2)),
      hot_over_uniform: Number(hotOverUniform.toFixed(2)),
      p99_ms: Math.max(uniform.p99_ms, hot.p99_ms),
      invariants: report.ok ? "ok" : "violated",
    }),
  );
  if (!report.ok) process.exitCode = 1;
} finally {
  await nc?.close();
  await sql.end({ timeout: 5 });
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
