/**
 * Schedules benchmark: BENCH_SCHEDULES (default 20,000) funded creators with a weekly payout schedule, all due at
 * once when the org's sandbox clock is moved past their anchor day; one run of the payouts service's schedule job
 * (gateway → ledger, payouts, each its own process, durable PostgreSQL) pays them all. Beside it, pgbench TPC-B on
 * the same cluster in the same run (bench/lib.ts pgbenchBaseline). Then BENCH_HOLDS (default 10,000) auto-release
 * holds due at the same instant, released by the ledger's job after one clock advance. Then the ledger invariant
 * check and a cross-check: one scheduled payout per creator, of its whole payable balance, and every hold released
 * once. Last line: one JSON object.
 *
 *   BENCH_SCHEDULES, BENCH_HOLDS, BENCH_SETUP_CONCURRENCY (default 32), BENCH_TIMEOUT_SEC (default 900),
 *   BENCH_SCHEDULE_BATCH (PAYOUTS_SCHEDULE_BATCH_MAX; default the service's own).
 *   Targets (the money-controls issue): payouts created/s ≥ 0.3 × pgbench tps; the holds released in under 10 s.
 */
import { readdirSync, readFileSync } from "node:fs";
import { Client, Pool } from "undici";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import { adminSql, closedLoop, deployedGatewayEnv, pgbenchBaseline, pgbenchLine, pgbenchRunner, startInfra } from "./lib.ts";
import { cpuMs, cpuMsByName, GATEWAY_NODE_OPTIONS, LEDGER_NODE_OPTIONS, nodeOptions, startChild, type Child } from "./lib/processes.ts";

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 20_000);
const HOLDS = Number(process.env.BENCH_HOLDS ?? 10_000);
const SETUP_CONCURRENCY = Number(process.env.BENCH_SETUP_CONCURRENCY ?? 32);
const TIMEOUT_SEC = Number(process.env.BENCH_TIMEOUT_SEC ?? 900);
const SALE_CENTS = 10_000;
const HOLD_CENTS = 100;
const DAY = 86_400;

type Post = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

/** `count` operations `op(i)`, `concurrency` at a time; throws the first failure. */
async function each(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
}

function expectStatus(r: { status: number; body: unknown }, ok: number[], what: string): void {
  if (!ok.includes(r.status)) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Polls `count()` until it reaches `target`; answers the seconds it took. */
async function until(count: () => Promise<number>, target: number, what: string): Promise<number> {
  const t0 = performance.now();
  let last = -1;
  for (;;) {
    const n = await count();
    if (n >= target) return (performance.now() - t0) / 1000;
    if (n !== last) console.log(`  ${what}: ${n}/${target}`);
    last = n;
    if (performance.now() - t0 > TIMEOUT_SEC * 1000) throw new Error(`${what}: ${n} of ${target} after ${TIMEOUT_SEC} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** CPU ms so far of a process and its live children (this run's PostgreSQL: the postmaster and its backends). */
function treeCpuMs(root: number): number {
  let total = cpuMs(root);
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === root) total += cpuMs(Number(pid));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

/** CPU time so far of each service process, this run's PostgreSQL and nats-server (ms), to tell per payout where the time went. */
function cpuNow(children: readonly Child[], postmaster: number, natsPid: number | undefined): number[] {
  return [...children.map((c) => cpuMs(c.proc.pid)), treeCpuMs(postmaster), natsPid === undefined ? cpuMsByName("nats-server") : cpuMs(natsPid)];
}

/** CPU ms per operation between two cpuNow readings, by process. */
function cpuPer(before: readonly number[], after: readonly number[], count: number): Record<string, number> {
  const names = ["ledger", "risk", "payouts", "gateway", "postgres", "nats"];
  return Object.fromEntries(names.map((n, i) => [n, Number((((after[i] ?? 0) - (before[i] ?? 0)) / Math.max(count, 1)).toFixed(3))]));
}

async function setup(post: Post): Promise<string[]> {
  const ids = Array.from({ length: SCHEDULES }, (_, i) => `sched_${i}`);
  const t0 = performance.now();
  await each(SCHEDULES, SETUP_CONCURRENCY, async (i) => {
    const id = ids[i] as string;
    expectStatus(
      await post("POST", "/v1/record-sale", { reference_id: `fund_${id}`, creator_id: id, amount: SALE_CENTS, creator_percent: 100 }),
      [201],
      "sale",
    );
    expectStatus(await post("PUT", `/v1/participants/${id}/payout-schedule`, { interval: "weekly", weekly_anchor: "monday" }), [200, 201], "schedule");
  });
  console.log(`setup: ${SCHEDULES} creators funded and scheduled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return ids;
}

const infra = await startInfra({ redis: true });
const children: Child[] = [];
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "schedules-bench" });
  const lifted = { capacity: 1e12, refill_per_sec: 1e12 };
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: lifted, write: lifted, treasury_write: lifted, record_sale: lifted })} where id = ${org_id}`;
  const { api_key } = await createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });
  const common = { NATS_URL: infra.natsUrl, NATS_PREFIX: "", DB_POOL_MAX: "20", LOG_LEVEL: "warn" };
  const start = async (name: string, extra: Record<string, string> = {}) => {
    const health = await freePort();
    const env = { ...common, DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, name), HEALTH_PORT: String(health), ...extra };
    children.push(await startChild(`services/${name}/src/main.ts`, env, `http://127.0.0.1:${health}/readyz`));
  };
  await start("ledger", { NODE_OPTIONS: LEDGER_NODE_OPTIONS });
  // Every money movement asks risk first (an org without policies: one indexed read), as deployed.
  await start("risk");
  // Only a clock advance runs the schedules: the measured run is the one it starts.
  const batch = process.env.BENCH_SCHEDULE_BATCH;
  await start("payouts", { PAYOUTS_SCHEDULE_INTERVAL_MS: "0", ...(batch === undefined ? {} : { PAYOUTS_SCHEDULE_BATCH_MAX: batch }) });
  const [gwPort, altPort] = [await freePort(), await freePort()];
  await start("gateway", { PORT: String(gwPort), ALT_PORT: String(altPort), ...deployedGatewayEnv(infra), ...nodeOptions(GATEWAY_NODE_OPTIONS) });
  const pool = new Pool(`http://127.0.0.1:${gwPort}`, { connections: 64, pipelining: 1 });
  const post: Post = async (method, path, body) => {
    const res = await pool.request({
      method: method as "POST",
      path,
      headers: { "x-api-key": api_key, "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };
  // A clock advance is sent once, on a connection of its own: a pooled one the gateway closed while it sat idle
  // (during pgbench) would fail it, and an advance must not be sent twice.
  const advance = async (seconds: number): Promise<void> => {
    const client = new Client(`http://127.0.0.1:${gwPort}`);
    try {
      const res = await client.request({
        method: "POST",
        path: "/v1/sandbox/clock/advance",
        headers: { "x-api-key": api_key, "content-type": "application/json" },
        body: JSON.stringify({ by_seconds: seconds }),
      });
      expectStatus({ status: res.statusCode, body: await res.body.json() }, [200], "advance");
    } finally {
      await client.close();
    }
  };
  await closedLoop(async () => (await post("GET", "/v1/sandbox/clock")).status, 4, 1);
  const ids = await setup(post);

  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: [1, 4, 16, 32], seconds: 10 });
  console.log(pgbenchLine(baseline));

  const scheduled = async () => Number((await sql<{ n: string }[]>`select count(*) as n from payouts.payouts where reference_id like 'schedule:%'`)[0]?.n ?? 0);
  const [backend] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  const postmaster = Number(readFileSync(`/proc/${backend?.pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
  const cpu = () => cpuNow(children, postmaster, infra.natsPid);
  const cpuRun = cpu();
  await advance(8 * DAY);
  const runSec = await until(scheduled, SCHEDULES, "scheduled payouts");
  const cpuPerPayout = cpuPer(cpuRun, cpu(), SCHEDULES);
  const payoutsPerSec = SCHEDULES / runSec;
  const tps = (await baseline.again()).tps;

  // Auto-release holds, all due one day after the clock's now.
  const clock = (await post("GET", "/v1/sandbox/clock")).body["clock"] as { now: string };
  const dueAt = new Date(Date.parse(clock.now) + DAY * 1000).toISOString();
  await each(SCHEDULES === 0 ? 0 : HOLDS, SETUP_CONCURRENCY, async (i) => {
    const id = `hold_${i}`;
    expectStatus(
      await post("POST", "/v1/record-sale", { reference_id: `hfund_${i}`, creator_id: id, amount: HOLD_CENTS, creator_percent: 100 }),
      [201],
      "sale",
    );
    expectStatus(
      await post("POST", "/v1/holds", { participant_id: id, amount: HOLD_CENTS, reference_id: `ahold_${i}`, hold_until: dueAt, auto_release: true }),
      [201],
      "hold",
    );
  });
  const released = async () =>
    Number((await sql<{ n: string }[]>`select count(*) as n from ledger.holds where auto_release and status = 'released'`)[0]?.n ?? 0);
  const cpuHolds = cpu();
  await advance(DAY + 60);
  const holdsSec = await until(released, HOLDS, "released holds");
  const cpuPerHold = cpuPer(cpuHolds, cpu(), HOLDS);

  const report = await checkInvariants(sql, {});
  const [check] = await sql<{ payouts: string; creators: string; amounts: string }[]>`
    select count(*) as payouts, count(distinct participant_id) as creators, count(*) filter (where amount <> ${SALE_CENTS}) as amounts
      from payouts.payouts where reference_id like 'schedule:%'`;
  const once = Number(check?.payouts) === ids.length && Number(check?.creators) === ids.length && Number(check?.amounts) === 0;
  const ratio = payoutsPerSec / tps;
  console.log(
    `schedules: ${SCHEDULES} paid in ${runSec.toFixed(1)} s = ${payoutsPerSec.toFixed(0)} payouts/s; pgbench ${tps.toFixed(0)} tps; ratio ${ratio.toFixed(3)} (target ≥ 0.3)`,
  );
  console.log(`CPU ms per payout: ${JSON.stringify(cpuPerPayout)}; per hold: ${JSON.stringify(cpuPerHold)}`);
  console.log(
    `holds: ${HOLDS} auto-released in ${holdsSec.toFixed(1)} s (target < 10 s); invariants ${report.ok ? "ok" : "VIOLATED"}; each creator paid once: ${once}`,
  );
  console.log(
    JSON.stringify({
      bench: "schedules",
      schedules: SCHEDULES,
      run_seconds: runSec,
      payouts_per_sec: payoutsPerSec,
      pgbench_tps: tps,
      ratio,
      target_ratio: 0.3,
      holds: HOLDS,
      holds_seconds: holdsSec,
      target_holds_seconds: 10,
      invariants_ok: report.ok,
      paid_once: once,
      cpu_ms_per_payout: cpuPerPayout,
      cpu_ms_per_hold: cpuPerHold,
    }),
  );
  await pool.close();
  await sql.end({ timeout: 5 });
  if (!report.ok || !once) process.exitCode = 1;
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
