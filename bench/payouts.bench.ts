/**
 * Payouts benchmark: sandbox payouts through the gateway (gateway → payouts → ledger, each its own process, on a
 * durable PostgreSQL; the gateway's rate limits in Redis, as deployed) from many funded creators, against pgbench
 * TPC-B on the same cluster in the same run (bench/lib.ts pgbenchBaseline: the same client levels at a scale of at
 * least the most clients, its best level). Then the ledger invariant check, and a cross-check that every payout moved money exactly once and
 * that the creators' wallets hold exactly what was funded minus what was paid out. Last line: one JSON object.
 *
 * Closed loop first (each of N clients sends payouts back to back) to find the maximum rate, then open loop:
 * payouts start at a fixed 50 % of that rate whatever the answers do, and p50/p99 are measured there. Rounds of
 * pgbench at its best level, the maximum rate at the best concurrency and the open loop give the ratio and the
 * latency (medians). The JSON counts every failed request (outside 2xx, or thrown) of every run in `errors`.
 * Each round's open loop has the floor beside it at the same rate (after it, or before it every other round): a
 * 1-cent ledger transfer between creators through the same gateway, the least any payout must do (authenticate,
 * post once, answer; bench/lib.ts floorTransfer). CPU per payout by
 * process is printed for the closed loop and for the open loop, where batches are smaller and each costs more.
 *
 *   BENCH_DURATION_SEC (default 5) per level; BENCH_CONCURRENCY (default "1,4,16,32,64"); BENCH_PACED_SEC (default 10);
 *   BENCH_ROUNDS (default 3); BENCH_PARTICIPANTS (default 64 funded creators).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
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
import { cpuMs, GATEWAY_NODE_OPTIONS, LEDGER_NODE_OPTIONS, nodeOptions, startChild, type Child } from "./lib/processes.ts";

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const PACED_SEC = Number(process.env.BENCH_PACED_SEC ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const LEVELS = (process.env.BENCH_CONCURRENCY ?? "1,4,16,32,64")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 64);
/** Each creator's starting balance: far more than any run pays out, so no payout is refused for funds. */
const FUNDING_CENTS = 10_000_000_000;
const PACED_FRACTION = 0.5;

/** Fields of /proc/<pid>/stat after the command name: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) of this benchmark's PostgreSQL cluster only: the postmaster, the children it has reaped (ended
 * backends) and its live children. Counting every process named postgres would count other clusters on a shared
 * machine, and backends that ended in between would make the difference negative.
 */
function clusterCpuMs(postmasterPid: number): number {
  const ticks = (f: string[] | undefined, from: number, to: number) => (f === undefined ? 0 : f.slice(from, to + 1).reduce((t, v) => t + Number(v), 0));
  let total = ticks(statFields(postmasterPid), 11, 14);
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const f = statFields(pid);
    if (f !== undefined && Number(f[1]) === postmasterPid) total += ticks(f, 11, 12);
  }
  return (total * 1000) / 100;
}

const infra = await startInfra({ redis: true });
const children: Child[] = [];
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "payouts-bench" });
  // Capacity, not the per-key limits, is what is measured.
  const lifted = { capacity: 1e12, refill_per_sec: 1e12 };
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${org_id}`;
  const { api_key } = await createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });
  const [dataDir] = await sql<{ setting: string }[]>`select setting from pg_settings where name = 'data_directory'`;
  // A cluster elsewhere (BENCH_DATABASE_URL) has no postmaster here: its CPU is then not reported.
  let postmasterPid: number | undefined;
  try {
    postmasterPid = Number(readFileSync(join(dataDir?.setting ?? "", "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    postmasterPid = undefined;
  }
  const pgCpuMs = () => (postmasterPid === undefined ? Number.NaN : clusterCpuMs(postmasterPid));

  const common = { NATS_URL: infra.natsUrl, NATS_PREFIX: "", DB_POOL_MAX: "20", LOG_LEVEL: "warn" };
  const names: string[] = [];
  const start = async (name: string, extra: Record<string, string> = {}) => {
    const health = await freePort();
    names.push(name);
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
  await start("payouts");
  const [gwPort, altPort] = [await freePort(), await freePort()];
  await start("gateway", { PORT: String(gwPort), ALT_PORT: String(altPort), ...deployedGatewayEnv(infra), ...nodeOptions(GATEWAY_NODE_OPTIONS) });
  const headers = { "x-api-key": api_key, "content-type": "application/json" };
  const pool = new Pool(`http://127.0.0.1:${gwPort}`, { connections: Math.max(...LEVELS, 64), pipelining: 1 });
  const post = async (path: string, body: unknown) => {
    const res = await pool.request({ method: "POST", path, headers, body: JSON.stringify(body) });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  const participants: string[] = [];
  for (let i = 0; i < PARTICIPANTS; i++) {
    const id = `bench_payee_${i}`;
    const created = await post("/v1/participants", { participant_id: id });
    if (created.status !== 201 && created.status !== 200) throw new Error(`participant: ${created.status} ${JSON.stringify(created.body)}`);
    const funded = await post("/v1/record-sale", { reference_id: `bench_fund_${i}`, creator_id: id, amount: FUNDING_CENTS, creator_percent: 100 });
    if (funded.status !== 201) throw new Error(`funding: ${funded.status} ${JSON.stringify(funded.body)}`);
    participants.push(id);
  }

  let seq = 0;
  /** One payout; answers its latency in ms, or throws. */
  const payout = async (): Promise<number> => {
    const n = seq++;
    const t0 = performance.now();
    const r = await post("/v1/payouts", {
      participant_id: participants[n % participants.length],
      amount: 100 + (n % 97),
      reference_id: `bench_${n}`,
      fees: n % 7,
      fees_paid_by: n % 2 === 0 ? "creator" : "platform",
    });
    if (r.status !== 201) throw new Error(`payout ${r.status}: ${JSON.stringify(r.body)}`);
    return performance.now() - t0;
  };

  /** The floor beside each open loop (bench/lib.ts floorTransfer). */
  const floor = () => floorTransfer(post, participants, seq++);

  const runLevel = (concurrency: number, seconds: number) => closedLoop(payout, concurrency, seconds);
  const runPaced = (rate: number, seconds: number, send: BenchOp = payout) => openLoop(send, rate, seconds);

  const warmUp = await runLevel(4, 2); // warm-up: JIT, pools, system accounts
  /** CPU ms so far by process: the services, this load generator, the PostgreSQL cluster and nats-server. */
  const cpuNow = (): Record<string, number> => {
    const now: Record<string, number> = {};
    children.forEach((c, i) => (now[names[i] ?? `child${i}`] = cpuMs(c.proc.pid)));
    const client = process.cpuUsage();
    now["load_generator"] = (client.user + client.system) / 1000;
    now["postgres"] = pgCpuMs();
    now["nats_server"] = cpuMs(infra.natsPid);
    return now;
  };
  // CPU per payout by process: robust to other load on the machine, and it shows where the time goes.
  const cpuPerPayout = (before: Record<string, number>, payouts: number): Record<string, number> => {
    const after = cpuNow();
    return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, (v - (before[k] ?? 0)) / Math.max(1, payouts)]));
  };
  const results: OpRun[] = [];
  const levelsBefore = cpuNow();
  for (const c of LEVELS) results.push(await runLevel(c, DURATION_SEC));
  const cpuPer = cpuPerPayout(
    levelsBefore,
    results.reduce((n, r) => n + r.count, 0),
  );
  const best = results.reduce((a, b) => (b.perSec > a.perSec ? b : a));

  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: LEVELS, seconds: DURATION_SEC * 2 });
  console.log(pgbenchLine(baseline));
  type Paced = OpRun & { rate: number };
  type Round = { tps: number; max: OpRun; paced: Paced; pacedCpu: Record<string, number>; floor: Paced };
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const tps = (await baseline.again()).tps;
    const max = await runLevel(best.concurrency, DURATION_SEC);
    const rate = Math.max(1, max.perSec * PACED_FRACTION);
    // The floor goes first in every other round, so neither one always runs on the other's leftovers.
    const floorFirst = i % 2 === 1 ? await runPaced(rate, PACED_SEC, floor) : undefined;
    const pacedBefore = cpuNow();
    const paced = await runPaced(rate, PACED_SEC);
    const pacedCpu = cpuPerPayout(pacedBefore, paced.count);
    rounds.push({ tps, max, paced, pacedCpu, floor: floorFirst ?? (await runPaced(rate, PACED_SEC, floor)) });
  }
  const ratioRound = medianBy(rounds, (r) => r.max.perSec / r.tps);
  const latencyRound = medianBy(rounds, (r) => r.paced.p99);
  const ratio = ratioRound.max.perSec / ratioRound.tps;

  console.log("concurrency  payouts/s    p50 ms    p99 ms  payouts  errors");
  for (const r of results) {
    console.log(
      `${String(r.concurrency).padStart(11)} ${r.perSec.toFixed(1).padStart(10)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(9)} ${String(r.count).padStart(8)} ${String(r.errors).padStart(7)}`,
    );
  }
  console.log(
    `round   pgbench tps (-c ${baseline.best.clients} -j ${baseline.best.threads})   max payouts/s  ratio   ${PACED_FRACTION * 100} % open loop: offered  payouts/s  p50 ms  p99 ms  errors   floor p50 ms  p99 ms`,
  );
  for (const [i, r] of rounds.entries()) {
    console.log(
      `${String(i + 1).padStart(5)} ${r.tps.toFixed(1).padStart(26)} ${r.max.perSec.toFixed(1).padStart(15)} ${(r.max.perSec / r.tps).toFixed(3).padStart(6)} ${r.paced.rate.toFixed(1).padStart(26)} ${r.paced.perSec.toFixed(1).padStart(10)} ${r.paced.p50.toFixed(1).padStart(7)} ${r.paced.p99.toFixed(1).padStart(7)} ${String(r.paced.errors).padStart(7)} ${r.floor.p50.toFixed(1).padStart(14)} ${r.floor.p99.toFixed(1).padStart(7)}`,
    );
  }
  console.log(
    `median ratio round: ${ratioRound.max.perSec.toFixed(1)} payouts/s ÷ ${ratioRound.tps.toFixed(1)} pgbench tps = ${ratio.toFixed(3)} (target ≥ 0.3)`,
  );
  console.log(
    `median latency round, open loop at ${PACED_FRACTION * 100} % of its max (${latencyRound.paced.rate.toFixed(1)} payouts/s): p50 ${latencyRound.paced.p50.toFixed(1)} ms, p99 ${latencyRound.paced.p99.toFixed(1)} ms (target < 100 ms); ` +
      `the floor (one ledger transfer through the gateway) at the same rate beside it: p50 ${latencyRound.floor.p50.toFixed(1)} ms, p99 ${latencyRound.floor.p99.toFixed(1)} ms`,
  );
  const cpuLine = (per: Record<string, number>) =>
    `${Object.entries(per)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(", ")}; total ${Object.values(per)
      .reduce((a, b) => a + b, 0)
      .toFixed(2)}`;
  console.log(`CPU ms per payout, closed loop over all levels: ${cpuLine(cpuPer)}`);
  console.log(`CPU ms per payout, open loop of the median latency round: ${cpuLine(latencyRound.pacedCpu)}`);

  // Invariants: the ledger's own checks, then money-once per payout and the creators' totals.
  const report = await checkInvariants(sql);
  const [once] = await sql<{ bad: string }[]>`
    select count(*)::text as bad from payouts.payouts p
     where p.status = 'paid' and (select count(*) from ledger.transactions t
       where t.org_id = p.org_id and t.livemode = p.livemode and t.reference_id = 'payout:' || p.id) <> 1`;
  const [totals] = await sql<{ paid: string; wallets: string; stuck: string }[]>`
    select (select coalesce(sum(amount), 0)::text from payouts.payouts where status = 'paid' and org_id = ${org_id}) as paid,
           (select coalesce(sum(balance), 0)::text from ledger.accounts where account_type = 'creator_earnings' and org_id = ${org_id}) as wallets,
           (select count(*)::text from payouts.payouts where status not in ('paid')) as stuck`;
  const funded = BigInt(FUNDING_CENTS) * BigInt(PARTICIPANTS);
  const walletsOk = BigInt(totals?.wallets ?? "0") === funded - BigInt(totals?.paid ?? "0");
  const errorsAll = warmUp.errors + rounds.reduce((n, r) => n + r.max.errors + r.paced.errors + r.floor.errors, 0) + results.reduce((n, r) => n + r.errors, 0);
  const invariantsOk = errorsAll === 0 && report.ok && once?.bad === "0" && walletsOk && totals?.stuck === "0";
  if (invariantsOk) {
    console.log(`invariants ok: ledger checks pass, every paid payout moved money once, wallets = funded − paid out (${totals?.paid} cents paid)`);
  } else {
    console.log(
      `invariant problems: errors ${errorsAll}; ledger ${JSON.stringify(report.violations.slice(0, 5))}; payouts not moved exactly once: ${once?.bad}; ` +
        `wallets ${totals?.wallets} vs funded ${funded} − paid ${totals?.paid}; not paid: ${totals?.stuck}`,
    );
  }
  await sql.end();
  console.log(
    JSON.stringify({
      payouts_per_s: Number(ratioRound.max.perSec.toFixed(1)),
      pgbench_tps: Number(ratioRound.tps.toFixed(1)),
      pgbench: baseline.json(),
      ratio: Number(ratio.toFixed(3)),
      p50_ms: Number(latencyRound.paced.p50.toFixed(1)),
      p99_ms: Number(latencyRound.paced.p99.toFixed(1)),
      paced_rate: Number(latencyRound.paced.rate.toFixed(1)),
      floor_p50_ms: Number(latencyRound.floor.p50.toFixed(1)),
      floor_p99_ms: Number(latencyRound.floor.p99.toFixed(1)),
      cpu_ms_per_payout: Object.fromEntries(Object.entries(cpuPer).map(([k, v]) => [k, Number(v.toFixed(3))])),
      cpu_ms_per_payout_open_loop: Object.fromEntries(Object.entries(latencyRound.pacedCpu).map(([k, v]) => [k, Number(v.toFixed(3))])),
      errors: errorsAll,
      invariants: invariantsOk ? "ok" : "failed",
    }),
  );
  await pool.close();
  if (!invariantsOk) process.exitCode = 1;
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
