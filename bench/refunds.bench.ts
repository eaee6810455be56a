/**
 * Refunds benchmark: partial refunds through the gateway (gateway → refunds → ledger, each its own process, on a
 * durable PostgreSQL; the gateway's rate limits in Redis, as deployed) spread over many recorded sales, against
 * pgbench TPC-B on the same cluster in the same run (bench/lib.ts pgbenchBaseline: the same client levels at a
 * scale of at least the most clients, its best level).
 * Then the ledger invariant check and a cross-check that every completed refund moved money exactly once and
 * that each sale's remainder in the ledger equals the refunds the refunds service recorded for it. Last line: one
 * JSON object of the figures.
 *
 * Closed loop first (each of N clients sends refunds back to back) at each concurrency level to find the best
 * one, and pgbench's sweep of the same levels its best; then rounds of pgbench at its best level, the maximum rate
 * at the benchmark's, and an open loop at half that rate (refunds start on a fixed schedule whatever the answers
 * do) where p50/p99 are measured. Medians of the rounds. The JSON counts every failed request (outside 2xx, or
 * thrown) of every run in `errors`. Each
 * round's open loop has the floor beside it at the same rate (after it, or before it every other round): a
 * 1-cent ledger transfer between creators through the same gateway, the least any refund must do.
 *
 *   BENCH_DURATION_SEC (default 5) per closed-loop run; BENCH_CONCURRENCY (default "1,4,16,32");
 *   BENCH_PACED_SEC (default 10) for the open loop; BENCH_ROUNDS (default 3); BENCH_SALES (default 2000) sales,
 *   BENCH_PARTICIPANTS (default 64) creators they belong to.
 */
import { Pool } from "undici";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import {
  adminSql,
  closedLoop,
  floorTransfer,
  deployedGatewayEnv,
  medianBy,
  openLoop,
  pgbenchBaseline,
  pgbenchLine,
  pgbenchRunner,
  startInfra,
  type BenchOp,
  type OpRun,
} from "./lib.ts";
import { GATEWAY_NODE_OPTIONS, LEDGER_NODE_OPTIONS, nodeOptions, startChild, type Child } from "./lib/processes.ts";

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const PACED_SEC = Number(process.env.BENCH_PACED_SEC ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const LEVELS = (process.env.BENCH_CONCURRENCY ?? "1,4,16,32")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const SALES = Number(process.env.BENCH_SALES ?? 2_000);
const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 64);
/** Each sale is large enough for every partial refund the run can send it (refunds of 1–2 dollars). */
const SALE_AMOUNT_CENTS = 1_000_000;
const HALF_RATE = 0.5;
/** The targets this benchmark checks (docs/performance.md). */
const RATIO_TARGET = 0.3;
const P99_TARGET_MS = 100;

const infra = await startInfra({ redis: true });
const children: Child[] = [];
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "refunds-bench" });
  // Capacity, not the per-key limits, is what is measured.
  const lifted = { capacity: 1e12, refill_per_sec: 1e12 };
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: lifted, write: lifted, treasury_write: lifted, record_sale: lifted })} where id = ${org_id}`;
  const { api_key } = await createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });

  const common = { NATS_URL: infra.natsUrl, NATS_PREFIX: "", DB_POOL_MAX: "20", LOG_LEVEL: "warn" };
  const healthPorts: Record<string, number> = {};
  const start = async (name: string, extra: Record<string, string> = {}) => {
    const health = await freePort();
    healthPorts[name] = health;
    children.push(
      await startChild(
        `services/${name}/src/main.ts`,
        { ...common, DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, name), HEALTH_PORT: String(health), ...extra },
        `http://127.0.0.1:${health}/readyz`,
      ),
    );
  };
  await start("ledger", { NODE_OPTIONS: LEDGER_NODE_OPTIONS });
  // Every money movement asks risk first (an org without policies: one indexed read), as deployed.
  await start("risk");
  await start("refunds");
  const gwPort = await freePort();
  await start("gateway", { PORT: String(gwPort), ALT_PORT: String(await freePort()), ...deployedGatewayEnv(infra), ...nodeOptions(GATEWAY_NODE_OPTIONS) });
  const headers = { "x-api-key": api_key, "content-type": "application/json" };
  const pool = new Pool(`http://127.0.0.1:${gwPort}`, { connections: Math.max(...LEVELS, 64), pipelining: 1 });
  const post = async (path: string, body: unknown) => {
    const res = await pool.request({ method: "POST", path, headers, body: JSON.stringify(body) });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  for (let i = 0; i < PARTICIPANTS; i++) {
    const r = await post("/v1/participants", { participant_id: `bench_creator_${i}`, default_split_percent: 80 });
    if (r.status !== 201 && r.status !== 200) throw new Error(`participant: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const sales: string[] = [];
  const setupStarted = performance.now();
  for (let i = 0; i < SALES; i += 32) {
    await Promise.all(
      Array.from({ length: Math.min(32, SALES - i) }, async (_, j) => {
        const ref = `bench_sale_${i + j}`;
        const r = await post("/v1/record-sale", {
          reference_id: ref,
          creator_id: `bench_creator_${(i + j) % PARTICIPANTS}`,
          amount: SALE_AMOUNT_CENTS,
          sales_tax: 1_000,
        });
        if (r.status !== 201) throw new Error(`record-sale: ${r.status} ${JSON.stringify(r.body)}`);
        sales.push(ref);
      }),
    );
  }
  console.log(
    `setup: ${PARTICIPANTS} creators, ${sales.length} sales of ${SALE_AMOUNT_CENTS} cents in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`,
  );

  let seq = 0;
  /** One partial refund of the next sale in turn (a fresh key each): its latency in ms, or throws. */
  const refund = async (): Promise<number> => {
    const n = seq++;
    const t0 = performance.now();
    const r = await post("/v1/refunds", {
      original_sale_reference: sales[n % sales.length],
      amount: 100 + (n % 97),
      reason: "bench",
      idempotency_key: `bench_refund_${n}`,
    });
    if (r.status !== 201) throw new Error(`refund ${r.status}: ${JSON.stringify(r.body)}`);
    return performance.now() - t0;
  };

  /** The floor beside each open loop (bench/lib.ts floorTransfer). */
  const creators = Array.from({ length: PARTICIPANTS }, (_, i) => `bench_creator_${i}`);
  const floor = () => floorTransfer(post, creators, seq++);

  const runLevel = (concurrency: number, seconds: number) => closedLoop(refund, concurrency, seconds);
  const runPaced = (rate: number, seconds: number, send: BenchOp = refund) => openLoop(send, rate, seconds);

  /** Each service's RPC handler time so far (rpc_duration_seconds of successful requests, by operation). */
  const handlerTimes = async () => {
    const out = new Map<string, { sum: number; count: number }>();
    for (const [name, port] of Object.entries(healthPorts)) {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
        (r) => r.text(),
        () => "",
      );
      for (const m of text.matchAll(/^rpc_duration_seconds_(sum|count)\{([^}]*)\} ([\d.e+-]+)$/gm)) {
        const op = /operation="([^"]+)"/.exec(m[2] ?? "")?.[1];
        if (op === undefined || !(m[2] ?? "").includes('outcome="ok"')) continue;
        const e = out.get(`${name}.${op}`) ?? { sum: 0, count: 0 };
        if (m[1] === "sum") e.sum += Number(m[3]);
        else e.count += Number(m[3]);
        out.set(`${name}.${op}`, e);
      }
    }
    return out;
  };
  const handlerDelta = (a: Map<string, { sum: number; count: number }>, b: Map<string, { sum: number; count: number }>) =>
    [...b]
      .map(([k, v]) => ({ k, count: v.count - (a.get(k)?.count ?? 0), sum: v.sum - (a.get(k)?.sum ?? 0) }))
      .filter((d) => d.count > 0)
      .map((d) => `${d.k} ${((d.sum / d.count) * 1000).toFixed(1)} ms`)
      .join(", ");

  const warmUp = await runLevel(4, 2); // warm-up: JIT, pools, system accounts
  const levels: OpRun[] = [];
  for (const c of LEVELS) {
    const before = await handlerTimes();
    levels.push(await runLevel(c, DURATION_SEC));
    console.log(`  concurrency ${c}: mean time in each service's handler: ${handlerDelta(before, await handlerTimes())}`);
  }
  const best = levels.reduce((a, b) => (b.perSec > a.perSec ? b : a));
  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: LEVELS, seconds: DURATION_SEC * 2 });
  console.log(pgbenchLine(baseline));
  type Round = { tps: number; max: OpRun; half: OpRun & { rate: number }; floor: OpRun & { rate: number } };
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const tps = (await baseline.again()).tps;
    const max = await runLevel(best.concurrency, DURATION_SEC);
    const rate = Math.max(1, max.perSec * HALF_RATE);
    // The floor goes first in every other round, so neither one always runs on the other's leftovers.
    const floorFirst = i % 2 === 1 ? await runPaced(rate, PACED_SEC, floor) : undefined;
    const half = await runPaced(rate, PACED_SEC);
    rounds.push({ tps, max, half, floor: floorFirst ?? (await runPaced(rate, PACED_SEC, floor)) });
  }
  const ratioRound = medianBy(rounds, (r) => r.max.perSec / r.tps);
  const latencyRound = medianBy(rounds, (r) => r.half.p99);
  const ratio = ratioRound.max.perSec / ratioRound.tps;

  console.log("concurrency  refunds/s    p50 ms    p99 ms  refunds  errors");
  for (const r of levels) {
    console.log(
      `${String(r.concurrency).padStart(11)} ${r.perSec.toFixed(1).padStart(10)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(9)} ${String(r.count).padStart(8)} ${String(r.errors).padStart(7)}`,
    );
  }
  console.log(
    `round  pgbench tps (${baseline.best.clients} clients)  max refunds/s  ratio   half rate: offered  refunds/s  p50 ms  p99 ms  errors   floor p50 ms  p99 ms`,
  );
  for (const [i, r] of rounds.entries()) {
    console.log(
      `${String(i + 1).padStart(5)} ${r.tps.toFixed(1).padStart(24)} ${r.max.perSec.toFixed(1).padStart(14)} ${(r.max.perSec / r.tps).toFixed(3).padStart(6)} ${r.half.rate.toFixed(1).padStart(19)} ${r.half.perSec.toFixed(1).padStart(10)} ${r.half.p50.toFixed(1).padStart(7)} ${r.half.p99.toFixed(1).padStart(7)} ${String(r.half.errors).padStart(7)} ${r.floor.p50.toFixed(1).padStart(14)} ${r.floor.p99.toFixed(1).padStart(7)}`,
    );
  }
  console.log(
    `median ratio round: ${ratioRound.max.perSec.toFixed(1)} refunds/s ÷ ${ratioRound.tps.toFixed(1)} pgbench tps = ${ratio.toFixed(3)} (target ≥ ${RATIO_TARGET})`,
  );
  console.log(
    `median latency round, open loop at half its max (${latencyRound.half.rate.toFixed(1)} refunds/s): p50 ${latencyRound.half.p50.toFixed(1)} ms, p99 ${latencyRound.half.p99.toFixed(1)} ms (target < ${P99_TARGET_MS} ms); ` +
      `the floor (one ledger transfer through the gateway) at the same rate beside it: p50 ${latencyRound.floor.p50.toFixed(1)} ms, p99 ${latencyRound.floor.p99.toFixed(1)} ms`,
  );

  // Invariants: the ledger's own checks; each completed refund moved money once; each sale's remainder matches.
  const report = await checkInvariants(sql);
  const [once] = await sql<{ bad: string }[]>`
    select count(*)::text as bad from refunds.refunds r
    where r.status = 'completed' and (select count(*) from ledger.transactions t
      where t.org_id = r.org_id and t.livemode = r.livemode and t.reference_id = r.ledger_reference) <> 1`;
  const [sides] = await sql<{ bad: string }[]>`
    select count(*)::text as bad from ledger.sales s
    where s.org_id = ${org_id} and s.refunded_amount <> coalesce((select sum(r.refunded_amount) from refunds.refunds r
      where r.org_id = s.org_id and r.livemode = s.livemode and r.sale_reference = s.sale_reference and r.status = 'completed'), 0)`;
  const [left] = await sql<{ pending: string; failed: string; completed: string }[]>`
    select count(*) filter (where status = 'pending')::text as pending, count(*) filter (where status = 'failed')::text as failed,
           count(*) filter (where status = 'completed')::text as completed from refunds.refunds`;
  const errors = warmUp.errors + levels.reduce((n, r) => n + r.errors, 0) + rounds.reduce((n, r) => n + r.max.errors + r.half.errors + r.floor.errors, 0);
  const invariantsOk = report.ok && once?.bad === "0" && sides?.bad === "0" && left?.pending === "0" && left.failed === "0" && errors === 0;
  if (invariantsOk)
    console.log(`invariants ok: ledger checks pass, ${left?.completed} refunds each moved money once, every sale's remainder matches its refunds`);
  else
    console.log(
      `invariant problems: ledger ${JSON.stringify(report.violations.slice(0, 5))}; refunds not moved exactly once: ${once?.bad}; sales whose remainder differs: ${sides?.bad}; pending ${left?.pending}, failed ${left?.failed}; request errors ${errors}`,
    );
  await sql.end();
  await pool.close();
  console.log(
    JSON.stringify({
      refunds_per_s: Number(ratioRound.max.perSec.toFixed(1)),
      pgbench_tps: Number(ratioRound.tps.toFixed(1)),
      pgbench: baseline.json(),
      ratio: Number(ratio.toFixed(3)),
      half_rate_p50_ms: Number(latencyRound.half.p50.toFixed(1)),
      half_rate_p99_ms: Number(latencyRound.half.p99.toFixed(1)),
      max_p99_ms: Number(ratioRound.max.p99.toFixed(1)),
      floor_p50_ms: Number(latencyRound.floor.p50.toFixed(1)),
      floor_p99_ms: Number(latencyRound.floor.p99.toFixed(1)),
      ratio_target_met: ratio >= RATIO_TARGET,
      p99_target_met: latencyRound.half.p99 < P99_TARGET_MS,
      errors,
      invariants: invariantsOk ? "ok" : "failed",
    }),
  );
  if (!invariantsOk) process.exitCode = 1;
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
