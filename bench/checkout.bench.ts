/**
 * Checkout benchmark: create + sandbox-complete flows through the gateway (gateway → payments → ledger, each
 * its own process, on a durable PostgreSQL; the gateway's rate limits in Redis, as deployed) at increasing
 * concurrency, against pgbench TPC-B on the same cluster in the same run (bench/lib.ts pgbenchBaseline: the same
 * client levels at a scale of at least the most clients, its best level). Then the ledger invariant check, and a cross-check that every completed session
 * moved money exactly once. Last line: one JSON object of the figures.
 *
 * Closed loop first (each of N clients runs flows back to back) to find the maximum rate, then open loop: flows
 * start at a fixed 70 % of that rate whatever the answers do, and p50/p99 are measured there (the target's
 * "p99 at 70 % of the maximum rate"). The levels find the best concurrency, and pgbench's sweep of the same levels
 * its best; then rounds of pgbench at its best level, the maximum rate at the benchmark's and the open loop at 70 %
 * of it give the ratio and the latency (median rounds). The JSON counts every failed flow (an answer outside 2xx
 * or a request that threw) of every run in `errors`.
 *
 * Risk: a second org runs the same flows with ten policies on checkouts (bench/lib/risk-policies.ts); each round
 * measures the maximum rate and the p99 at one offered rate with and without them, one after the other, and the
 * medians give what the evaluation costs (targets: ≥ 0.90 of the throughput, ≤ 5 ms added to the p99).
 *
 *   BENCH_DURATION_SEC (default 5) per concurrency level; BENCH_CONCURRENCY (default "1,4,16,32");
 *   BENCH_PACED_SEC (default 10) for the open-loop run at 70 % (at 200 flows/s, 5 s leave only 10 flows above
 *   the p99, so one stall moves it); BENCH_EXTRA_FRACTIONS (e.g. "0.3,0.5") for more open-loop runs;
 *   BENCH_PAYMENTS_POOL / BENCH_PAYMENTS_NODE_OPTIONS: the payments service's pool size and Node flags; BENCH_TIMELINE=1.
 */
import { readFileSync } from "node:fs";
import { Pool } from "undici";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import {
  adminSql,
  closedLoop,
  latencyTimeline,
  deployedGatewayEnv,
  medianBy,
  openLoop,
  percentile,
  pgbenchBaseline,
  pgbenchLine,
  pgbenchRunner,
  startInfra,
  type OpRun,
} from "./lib.ts";
import { riskSummary, TEN_CHECKOUT_POLICIES, type RiskRound } from "./lib/risk-policies.ts";
import { cpuMs, cpuMsByName, GATEWAY_NODE_OPTIONS, LEDGER_NODE_OPTIONS, nodeOptions, startChild, type Child } from "./lib/processes.ts";

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const PACED_SEC = Number(process.env.BENCH_PACED_SEC ?? 10);
/**
 * BENCH_ROUNDS (5) rounds of pgbench, the maximum rate (flows at the best concurrency) and the open loop at 70 % of
 * it: the machine's speed drifts, and figures measured minutes apart would compare the drift. Single rounds of one
 * run differ by up to 20 % (ratio 0.177–0.215, p99 74–136 ms in one run of three rounds): the median of five is
 * moved by two slow rounds, not by one.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const LEVELS = (process.env.BENCH_CONCURRENCY ?? "1,4,16,32")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 16);
/** Extra open-loop runs at these fractions of the maximum rate (BENCH_EXTRA_FRACTIONS, e.g. "0.3,0.5"): the latency curve. */
const EXTRA_FRACTIONS = (process.env.BENCH_EXTRA_FRACTIONS ?? "")
  .split(",")
  .map(Number)
  .filter((f) => f > 0 && f < 1);
/** BENCH_TIMELINE=1: print each open-loop run's latency per 500 ms of start time, and the PostgreSQL log's checkpoint and autovacuum lines (where the tail comes from). */
const TIMELINE = process.env.BENCH_TIMELINE === "1";

type LevelResult = OpRun & {
  /** Latency by step (create, complete). */
  steps?: string;
};

const infra = await startInfra({ redis: true });
const children: Child[] = [];
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "checkout-bench" });
  // Capacity, not the per-key limits, is what is measured.
  const lifted = { capacity: 1e12, refill_per_sec: 1e12 };
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${org_id}`;
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
  await start("payments", {
    ...(process.env.BENCH_PAYMENTS_POOL ? { DB_POOL_MAX: process.env.BENCH_PAYMENTS_POOL } : {}),
    ...nodeOptions(process.env.BENCH_PAYMENTS_NODE_OPTIONS),
  });
  const [gwPort, altPort] = [await freePort(), await freePort()];
  await start("gateway", { PORT: String(gwPort), ALT_PORT: String(altPort), ...deployedGatewayEnv(infra), ...nodeOptions(GATEWAY_NODE_OPTIONS) });
  const base = `http://127.0.0.1:${gwPort}`;
  const headers = { "x-api-key": api_key, "content-type": "application/json" };
  // A second org, the same flows, with ten risk policies on checkouts: what the evaluation adds, measured beside.
  const { org_id: policyOrg } = await createOrg(sql, { name: "checkout-bench-risk" });
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${policyOrg}`;
  const policyHeaders = {
    "x-api-key": (await createApiKey(sql, { orgId: policyOrg, environment: "sandbox", scopes: null })).api_key,
    "content-type": "application/json",
  };
  // The load generator shares the machine's two cores with what it measures (as pgbench does): undici's
  // keep-alive pool costs about half of what fetch costs per request, so less of the machine goes to the client.
  const pool = new Pool(base, { connections: Math.max(...LEVELS, 64), pipelining: 1 });
  const post = async (path: string, body: unknown, as: Record<string, string> = headers) => {
    const res = await pool.request({ method: "POST", path, headers: as, body: JSON.stringify(body) });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  const participants: string[] = [];
  for (let i = 0; i < PARTICIPANTS; i++) {
    const id = `bench_creator_${i}`;
    for (const as of [headers, policyHeaders]) {
      const r = await post("/v1/participants", { participant_id: id, default_split_percent: 80 }, as);
      if (r.status !== 201 && r.status !== 200) throw new Error(`participant: ${r.status} ${JSON.stringify(r.body)}`);
    }
    participants.push(id);
  }
  for (const p of TEN_CHECKOUT_POLICIES) {
    const r = await post("/v1/fraud/policies", p, policyHeaders);
    if (r.status !== 201) throw new Error(`policy: ${r.status} ${JSON.stringify(r.body)}`);
  }

  let flowSeq = 0;
  /** Latency of each step of the flows since the last reset (where a flow's time goes). */
  const steps = { create: [] as number[], complete: [] as number[] };
  /** One flow: create a session, then complete it in sandbox. Answers its latency in ms, or throws. */
  const flowAs = (as: Record<string, string>) => async (): Promise<number> => {
    const n = flowSeq++;
    const t0 = performance.now();
    const created = await post(
      "/v1/checkout-sessions",
      { participant_id: participants[n % participants.length], amount: 1000 + (n % 97), sales_tax: n % 13 },
      as,
    );
    if (created.status !== 201) throw new Error(`create ${created.status}: ${JSON.stringify(created.body)}`);
    const id = String((created.body["checkout_session"] as Record<string, unknown>)["id"]);
    const t1 = performance.now();
    const done = await post(`/v1/sandbox/checkouts/${id}/complete`, {}, as);
    if (done.status !== 200) throw new Error(`complete ${done.status}: ${JSON.stringify(done.body)}`);
    const t2 = performance.now();
    steps.create.push(t1 - t0);
    steps.complete.push(t2 - t1);
    return t2 - t0;
  };
  const flow = flowAs(headers);
  const policyFlow = flowAs(policyHeaders);
  /**
   * Each service's /metrics text, scraped once per reading: a scrape resets the event-loop delay histogram, so
   * every figure of a reading must come from the same scrape.
   */
  const scrape = async () => {
    const out = new Map<string, string>();
    for (const [name, port] of Object.entries(healthPorts))
      out.set(
        name,
        await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => "",
        ),
      );
    return out;
  };
  /**
   * Each service's RPC handler time so far (rpc_duration_seconds sum and count), and the payments completion
   * steps (checkout_completion_step_seconds: intent, ledger_post, settle).
   */
  const rpcTimes = (texts: Map<string, string>) => {
    const out = new Map<string, { sum: number; count: number }>();
    for (const [name, text] of texts) {
      for (const m of text.matchAll(/^(rpc_duration_seconds|checkout_completion_step_seconds)_(sum|count)\{([^}]*)\} ([\d.e+-]+)$/gm)) {
        const labels = m[3] ?? "";
        const isStep = m[1] === "checkout_completion_step_seconds";
        const op = isStep ? /step="([^"]+)"/.exec(labels)?.[1] : /operation="([^"]+)"/.exec(labels)?.[1];
        if (op === undefined || (!isStep && !labels.includes('outcome="ok"'))) continue;
        const k = isStep ? `${name}.completion step ${op}` : `${name}.${op}`;
        const e = out.get(k) ?? { sum: 0, count: 0 };
        if (m[2] === "sum") e.sum += Number(m[4]);
        else e.count += Number(m[4]);
        out.set(k, e);
      }
    }
    return out;
  };
  /** Each service's event-loop delay since the last scrape (max, p99) and GC time so far. */
  const runtimeFigures = (texts: Map<string, string>) => {
    const out = new Map<string, { lagMax: number; lagP99: number; gcSeconds: number }>();
    for (const [name, text] of texts) {
      const value = (metric: string) => Number(new RegExp(`^${metric}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, "m").exec(text)?.[1] ?? Number.NaN);
      const gcSeconds = [...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)$/gm)].reduce((t, m) => t + Number(m[1]), 0);
      out.set(name, {
        lagMax: value("nodejs_eventloop_lag_max_seconds"),
        lagP99: value("nodejs_eventloop_lag_p99_seconds"),
        gcSeconds,
      });
    }
    return out;
  };
  const runtimeDelta = (a: ReturnType<typeof runtimeFigures>, b: ReturnType<typeof runtimeFigures>, seconds: number) =>
    [...b]
      .map(
        ([k, v]) =>
          `${k}: event-loop delay max ${(v.lagMax * 1000).toFixed(0)} ms / p99 ${(v.lagP99 * 1000).toFixed(1)} ms, GC ${(((v.gcSeconds - (a.get(k)?.gcSeconds ?? 0)) * 1000) / seconds).toFixed(1)} ms/s`,
      )
      .join("; ");
  const rpcDelta = (a: Map<string, { sum: number; count: number }>, b: Map<string, { sum: number; count: number }>) =>
    [...b]
      .map(([k, v]) => ({ k, count: v.count - (a.get(k)?.count ?? 0), sum: v.sum - (a.get(k)?.sum ?? 0) }))
      .filter((d) => d.count > 0)
      .map((d) => `${d.k} ${((d.sum / d.count) * 1000).toFixed(1)} ms`)
      .join(", ");
  const stepFigures = () => {
    const f = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return `p50 ${percentile(s, 50).toFixed(1)} / p99 ${percentile(s, 99).toFixed(1)} ms`;
    };
    const text = `create ${f(steps.create)}; complete ${f(steps.complete)}`;
    steps.create = [];
    steps.complete = [];
    return text;
  };

  const runLevel = (concurrency: number, seconds: number): Promise<LevelResult> => closedLoop(flow, concurrency, seconds);

  /** Open loop: a flow starts every 1/rate s (late starts catch up at once); latency from each flow's start. */
  const runPaced = async (rate: number, seconds: number): Promise<LevelResult & { rate: number }> => {
    const timeline: [number, number][] = [];
    const wallStart = new Date();
    const r = await openLoop(flow, rate, seconds, (at, ms) => void timeline.push([at, ms]));
    if (TIMELINE) printTimeline(wallStart, timeline);
    return r;
  };

  const printTimeline = (wallStart: Date, timeline: [number, number][]) => {
    console.log(`  timeline of the open loop from ${wallStart.toISOString()} (start offset: flows, p50/p99/max ms):`);
    const line = latencyTimeline(timeline);
    for (let i = 0; i < line.length; i += 6) console.log(`    ${line.slice(i, i + 6).join(" | ")}`);
  };
  if (TIMELINE) {
    await sql`alter system set log_autovacuum_min_duration = 0`;
    await sql`alter system set log_checkpoints = on`;
    await sql`select pg_reload_conf()`;
  }
  const warmUp = await runLevel(4, 2); // warm-up: JIT, pools, system accounts
  const commits = async () => Number((await sql<{ n: string }[]>`select sum(xact_commit)::text as n from pg_stat_database`)[0]?.n ?? 0);
  const commitsBefore = await commits();
  const results: LevelResult[] = [];
  const names = ["ledger", "risk", "payments", "gateway"];
  const cpuBefore = children.map((c) => cpuMs(c.proc.pid));
  const clientBefore = process.cpuUsage();
  const serversBefore = [cpuMsByName("postgres"), cpuMsByName("nats-server")];
  for (const c of LEVELS) {
    stepFigures();
    results.push({ ...(await runLevel(c, DURATION_SEC)), steps: stepFigures() });
  }
  const flowsMeasured = Math.max(
    1,
    results.reduce((n, r) => n + r.count, 0),
  );
  const clientUsage = process.cpuUsage(clientBefore);
  // CPU per flow by process: robust to other load on the machine, and it shows where the time goes.
  const cpuPerFlow = children.map((c, i) => `${names[i]} ${((cpuMs(c.proc.pid) - (cpuBefore[i] ?? 0)) / flowsMeasured).toFixed(2)}`).join(", ");
  const clientPerFlow = ((clientUsage.user + clientUsage.system) / 1000 / flowsMeasured).toFixed(2);
  const [pgPerFlow, natsPerFlow] = [cpuMsByName("postgres"), cpuMsByName("nats-server")].map((v, i) =>
    ((v - (serversBefore[i] ?? 0)) / flowsMeasured).toFixed(2),
  );
  // Statistics are reported with a small delay; a rough figure is what is wanted here.
  await new Promise((r) => setTimeout(r, 1000));
  const commitsPerFlow =
    ((await commits()) - commitsBefore) /
    Math.max(
      1,
      results.reduce((n, r) => n + r.count, 0),
    );
  const best = results.reduce((a, b) => (b.perSec > a.perSec ? b : a));
  // pgbench's sweep of the same levels finds its best; then rounds of pgbench at that level, flows at the best
  // concurrency (the maximum rate), then the open loop at 70 % of that rate: each figure is compared with one
  // measured seconds before it, since the machine's speed drifts.
  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: LEVELS, seconds: DURATION_SEC * 2 });
  console.log(pgbenchLine(baseline));
  const extra: LevelResult[] = [];
  for (const f of EXTRA_FRACTIONS) {
    const r = await runPaced(Math.max(1, best.perSec * f), PACED_SEC);
    extra.push(r);
    console.log(
      `open loop at ${(f * 100).toFixed(0)} % of the best level (${r.rate.toFixed(1)} flows/s offered): ${r.perSec.toFixed(1)} flows/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${r.errors} errors`,
    );
  }
  type Round = { tps: number; max: LevelResult; paced: LevelResult & { rate: number }; steps: string; handlers: string; runtime: string };
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const tps = (await baseline.again()).tps;
    const max = await runLevel(best.concurrency, DURATION_SEC);
    stepFigures();
    const before = await scrape();
    const [rpcBefore, runtimeBefore] = [rpcTimes(before), runtimeFigures(before)];
    const paced = await runPaced(Math.max(1, max.perSec * 0.7), PACED_SEC);
    const after = await scrape();
    rounds.push({
      tps,
      max,
      paced,
      steps: stepFigures(),
      handlers: rpcDelta(rpcBefore, rpcTimes(after)),
      runtime: runtimeDelta(runtimeBefore, runtimeFigures(after), PACED_SEC),
    });
  }
  // Risk: the same concurrency and the same offered rate with and without ten policies. Each round runs without,
  // with, without again: the run with is compared to the mean of the two around it (drift of the machine between
  // runs cancels), and the two runs without, identical, show how far apart the same run lands: the noise floor.
  const riskRounds: RiskRound[] = [];
  // The profile beside the figures: the risk service's own mean time per evaluation in each open-loop run.
  const evaluateMs: [number, number, number][] = [];
  const evaluateTimed = async <T>(run: () => Promise<T>): Promise<{ run: T; ms: number }> => {
    const before = rpcTimes(await scrape()).get("risk.internal.evaluate") ?? { sum: 0, count: 0 };
    const result = await run();
    const after = rpcTimes(await scrape()).get("risk.internal.evaluate") ?? { sum: 0, count: 0 };
    return { run: result, ms: after.count > before.count ? ((after.sum - before.sum) / (after.count - before.count)) * 1000 : Number.NaN };
  };
  for (let i = 0; i < ROUNDS; i++) {
    const without = await runLevel(best.concurrency, DURATION_SEC);
    const withPolicies = await closedLoop(policyFlow, best.concurrency, DURATION_SEC);
    const withoutAgain = await runLevel(best.concurrency, DURATION_SEC);
    const rate = Math.max(1, ((without.perSec + withoutAgain.perSec) / 2) * 0.7);
    const pacedWithout = await evaluateTimed(() => openLoop(flow, rate, PACED_SEC));
    const pacedWith = await evaluateTimed(() => openLoop(policyFlow, rate, PACED_SEC));
    const pacedWithoutAgain = await evaluateTimed(() => openLoop(flow, rate, PACED_SEC));
    riskRounds.push({
      without,
      with: withPolicies,
      withoutAgain,
      pacedWithout: pacedWithout.run,
      pacedWith: pacedWith.run,
      pacedWithoutAgain: pacedWithoutAgain.run,
    });
    evaluateMs.push([pacedWithout.ms, pacedWith.ms, pacedWithoutAgain.ms]);
  }
  const risk = riskSummary(riskRounds);
  const ratioRound = medianBy(rounds, (r) => r.max.perSec / r.tps);
  const latencyRound = medianBy(rounds, (r) => r.paced.p99);
  const pgTps = ratioRound.tps;
  const paced = latencyRound.paced;

  console.log("concurrency   flows/s    p50 ms    p99 ms    flows  errors");
  for (const r of results) {
    console.log(
      `${String(r.concurrency).padStart(11)} ${r.perSec.toFixed(1).padStart(9)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(9)} ${String(r.count).padStart(8)} ${String(r.errors).padStart(7)}`,
    );
  }
  for (const r of results) console.log(`  concurrency ${r.concurrency} by step: ${r.steps ?? ""}`);
  console.log(`round   pgbench tps (${baseline.best.clients} clients)   max flows/s  ratio   70 % open loop: offered  flows/s  p50 ms  p99 ms  errors`);
  for (const [i, r] of rounds.entries()) {
    console.log(
      `${String(i + 1).padStart(5)} ${r.tps.toFixed(1).padStart(25)} ${r.max.perSec.toFixed(1).padStart(13)} ${(r.max.perSec / r.tps).toFixed(3).padStart(6)} ${r.paced.rate.toFixed(1).padStart(24)} ${r.paced.perSec.toFixed(1).padStart(8)} ${r.paced.p50.toFixed(1).padStart(7)} ${r.paced.p99.toFixed(1).padStart(7)} ${String(r.paced.errors).padStart(7)}`,
    );
  }
  console.log(
    `median ratio round: ${ratioRound.max.perSec.toFixed(1)} flows/s ÷ ${pgTps.toFixed(1)} pgbench tps = ${(ratioRound.max.perSec / pgTps).toFixed(3)} (target ≥ 0.2)`,
  );
  console.log(
    `median latency round, open loop at 70 % of its max (${paced.rate.toFixed(1)} flows/s): p50 ${paced.p50.toFixed(1)} ms, p99 ${paced.p99.toFixed(1)} ms (target < 100 ms)`,
  );
  console.log(`  by step: ${latencyRound.steps}`);
  console.log(`  mean time in each service's handler: ${latencyRound.handlers}`);
  console.log(`  runtime: ${latencyRound.runtime}`);
  console.log(`risk: ten policies on the second org (${best.concurrency} clients; open loop at 70 % of the max without):`);
  for (const l of risk.lines) console.log(`  ${l}`);
  console.log(
    `median: throughput with ÷ without ${risk.throughputRatio.toFixed(3)} (target ≥ 0.90), p99 added ${risk.p99AddedMs.toFixed(1)} ms (target ≤ 5 ms)`,
  );
  console.log(
    `  risk's own mean time per evaluation in the open loops (without / with / without'): ${evaluateMs.map((r) => r.map((x) => x.toFixed(2)).join(" / ")).join("; ")} ms`,
  );
  console.log(
    `noise floor (the two identical runs without): throughput apart by ${(risk.throughputNoise * 100).toFixed(1)} %, p99 apart by ${risk.p99NoiseMs.toFixed(1)} ms (medians)`,
  );
  const ratio = ratioRound.max.perSec / pgTps;
  console.log(`CPU ms per flow (closed loop): ${cpuPerFlow}, load generator ${clientPerFlow}, PostgreSQL ${pgPerFlow}, nats-server ${natsPerFlow}`);
  console.log(`database commits per flow (all services, incl. read-only statements): ${commitsPerFlow.toFixed(1)}`);

  // Invariants: the ledger's own checks, then money-once per completed session and the creator totals.
  const report = await checkInvariants(sql);
  const [once] = await sql<{ bad: string }[]>`
    select count(*)::text as bad from payments.checkout_sessions c
    where c.status = 'completed' and (select count(*) from ledger.transactions t
      where t.org_id = c.org_id and t.livemode = c.livemode and t.reference_id = 'checkout:' || c.id::text) <> 1`;
  const [totals] = await sql<{ sessions: string; wallets: string }[]>`
    select (select coalesce(sum(creator_amount), 0)::text from payments.checkout_sessions where status = 'completed' and org_id = ${org_id}) as sessions,
           (select coalesce(sum(balance), 0)::text from ledger.accounts where account_type = 'creator_earnings' and org_id = ${org_id}) as wallets`;
  const stuck = await sql`select 1 from payments.checkout_sessions where status = 'completing'`;
  // Every flow that failed, in every run: an answer outside 2xx or a request that threw (bench/lib.ts closedLoop, openLoop).
  const errors = [
    warmUp,
    ...results,
    ...extra,
    ...rounds.flatMap((r) => [r.max, r.paced]),
    ...riskRounds.flatMap((r) => [r.without, r.with, r.withoutAgain, r.pacedWithout, r.pacedWith, r.pacedWithoutAgain]),
  ].reduce((n, r) => n + r.errors, 0);
  const invariantsOk = errors === 0 && report.ok && once?.bad === "0" && totals?.sessions === totals?.wallets && stuck.length === 0;
  if (!invariantsOk) {
    console.log(
      `invariant problems: failed flows ${errors}; ledger ${JSON.stringify(report.violations.slice(0, 5))}; sessions not moved exactly once: ${once?.bad}; ` +
        `creator totals sessions=${totals?.sessions} wallets=${totals?.wallets}; stuck completing: ${stuck.length}`,
    );
  } else {
    console.log(
      `invariants ok: ledger checks pass, ${results.reduce(
        (s, r) => s + r.count,
        rounds.reduce((n, r) => n + r.max.count + r.paced.count, 0),
      )} flows each moved money once, creator totals match (${totals?.wallets} cents)`,
    );
  }
  await sql.end();
  if (TIMELINE && infra.pgLogFile !== undefined) {
    const lines = readFileSync(infra.pgLogFile, "utf8")
      .split("\n")
      .filter((l) => /checkpoint (starting|complete)|automatic (vacuum|analyze)/.test(l));
    console.log(`PostgreSQL checkpoints and autovacuum (${lines.length} lines):`);
    for (const l of lines) console.log(`  ${l.slice(0, 200)}`);
  }
  console.log(
    JSON.stringify({
      flows_per_s: Number(ratioRound.max.perSec.toFixed(1)),
      pgbench_tps: Number(pgTps.toFixed(1)),
      pgbench: baseline.json(),
      ratio: Number(ratio.toFixed(3)),
      // Latency at 70 % of the maximum rate (open loop), as the target states it; at the maximum, max_p99_ms.
      p50_ms: Number(paced.p50.toFixed(1)),
      p99_ms: Number(paced.p99.toFixed(1)),
      max_p99_ms: Number(ratioRound.max.p99.toFixed(1)),
      risk_throughput_ratio: Number(risk.throughputRatio.toFixed(3)),
      risk_p99_added_ms: Number(risk.p99AddedMs.toFixed(1)),
      risk_throughput_noise: Number(risk.throughputNoise.toFixed(3)),
      risk_p99_noise_ms: Number(risk.p99NoiseMs.toFixed(1)),
      errors,
      invariants: invariantsOk ? "ok" : "failed",
    }),
  );
  await pool.close();
  if (!invariantsOk) process.exitCode = 1;
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
