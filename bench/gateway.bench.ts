/**
 * npm run bench:gateway — gateway throughput and latency against a bare Fastify hello-world on the same
 * machine in the same run. The gateway route is authenticated (API key lookup, scope, rate limit, validation)
 * and makes a NATS request/reply to a trivial service handler; its rate-limit buckets are in Redis, as deployed.
 * Last line: one JSON object of the figures, with `errors`: the gateway's answers outside 2xx and requests that
 * failed, over every run sent to it (warm-ups included).
 *
 * Maximum rate: each server's best over the concurrency levels BENCH_CONNECTIONS ("64,128,256" keep-alive
 * connections, autocannon, closed loop). A server's maximum is where more connections stop helping: hello-world
 * reaches it with few, while the gateway's path (three processes and a broker on two cores) keeps gaining
 * because each event-loop turn then carries more requests per wake-up and per NATS write. Latency at half the
 * maximum: open loop at an even rate (bench/lib.ts pacedLoad), a wait for a free connection included, and
 * hello-world (and with BENCH_FLOOR=1 the floor) at the same rate for comparison, in alternating slices. For
 * those runs it also prints CPU per request by process and each event loop's share of the wall time on a CPU
 * and runnable but waiting for one (Linux schedstat): how close to saturated "half the maximum" leaves each.
 *
 *   BENCH_ROUNDS (5) rounds, each measuring both servers at every level for BENCH_DURATION_SEC (5) in
 *   BENCH_SLICES (2) alternating slices, the median round reported; BENCH_GATEWAY_NODE_OPTIONS: V8/Node flags
 *   for the gateway process (default: as deployed; "" for none); BENCH_FLOOR=1: each round also measures
 *   bench/floor.ts, Fastify plus the same NATS round trip and nothing else (the most a gateway on these parts
 *   could do); BENCH_TIMELINE=1: the half-rate runs' latency per 500 ms and the share of slow requests by the
 *   gateway's own histogram; BENCH_EXTRA_FRACTIONS ("0.1,0.25"): more open-loop runs at these fractions of the
 *   maximum; BENCH_CHILD_STDOUT_DIR: keep each child's stdout there (e.g. with BENCH_NODE_ARGS=--trace-gc).
 */
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { adminSql, deployedGatewayEnv, mergePaced, load, pacedLoad, startInfra, type LoadResult, type PacedResult } from "./lib.ts";
import { GATEWAY_NODE_OPTIONS, nodeOptions, cpuMs, cpuMsByName, schedTimes, startChild, type Child, type SchedTimes } from "./lib/processes.ts";

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
/** Each level's BENCH_DURATION_SEC per server is split into this many alternating slices. */
const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 2));
const LEVELS = (process.env.BENCH_CONNECTIONS ?? "64,128,256")
  .split(",")
  .map(Number)
  .filter((n) => n > 0);
const FLOOR = process.env.BENCH_FLOOR === "1";
const EXTRA_FRACTIONS = (process.env.BENCH_EXTRA_FRACTIONS ?? "").split(",").filter(Boolean).map(Number);
const TIMELINE = process.env.BENCH_TIMELINE === "1";

const infra = await startInfra({ redis: true });
const children: Child[] = [];
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "bench" });
  // The benchmark measures capacity, not the per-key limit: lift the read bucket for this org.
  await sql`update gateway.orgs set rate_limits = ${sql.json({ read: { capacity: 1e12, refill_per_sec: 1e12 } })} where id = ${org_id}`;
  const { api_key } = await createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: ["read"] });
  await sql.end();

  const [gwPort, altPort, gwHealth, svcHealth] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const common = { NATS_URL: infra.natsUrl, NATS_PREFIX: "" };
  children.push(
    await startChild(
      "bench/trivial-service.ts",
      { ...common, DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "ledger"), HEALTH_PORT: String(svcHealth) },
      `http://127.0.0.1:${svcHealth}/readyz`,
    ),
  );
  children.push(
    await startChild(
      "services/gateway/src/main.ts",
      {
        ...common,
        DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "gateway"),
        PORT: String(gwPort),
        ALT_PORT: String(altPort),
        HEALTH_PORT: String(gwHealth),
        ...deployedGatewayEnv(infra),
        ...nodeOptions(GATEWAY_NODE_OPTIONS),
      },
      `http://127.0.0.1:${gwHealth}/readyz`,
    ),
  );
  const hello = await startChild("bench/hello.ts", { PORT: "0" });
  children.push(hello);
  const floor = FLOOR ? await startChild("bench/floor.ts", { NATS_URL: infra.natsUrl, ...nodeOptions(GATEWAY_NODE_OPTIONS) }) : undefined;
  if (floor) children.push(floor);

  const gwUrl = `http://127.0.0.1:${gwPort}/v1/participants`;
  const headers = { "x-api-key": api_key };
  const check = await fetch(gwUrl, { headers });
  if (check.status !== 200) throw new Error(`gateway route answered ${check.status}: ${await check.text()}`);

  /** The gateway's failed requests over every run sent to it: answers outside 2xx and requests that failed. */
  let gwErrors = 0;
  const countGw = <R extends LoadResult>(r: R): R => {
    gwErrors += r.errors + r.non2xx;
    return r;
  };
  // Warm up both at every level (JIT, and V8 grows the young generation only under sustained load): without
  // it the first round's gateway figures ran about a quarter below the later rounds'.
  for (const connections of LEVELS) {
    countGw(await load({ url: gwUrl, headers, connections, durationSec: 2 }));
    await load({ url: `http://127.0.0.1:${hello.port}/`, connections, durationSec: 2 });
  }
  // The machine's speed drifts within seconds (a shared host): at each level hello and gateway alternate in
  // BENCH_SLICES short slices (H G, then G H, …) that are summed, so both see the same mix of fast and slow
  // moments; each round's ratio compares the two maxima, and the median round is reported.
  const [svcChild, gwChild] = children;
  type Best = { run: LoadResult; connections: number };
  type Round = {
    hello: Best;
    gw: Best;
    floor?: Best;
    helloCpuUs: number;
    helloClientCpuUs: number;
    gwCpuUs: number;
    svcCpuUs: number;
    natsCpuUs: number;
    clientCpuUs: number;
  };
  const rounds: Round[] = [];
  const selfCpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  /** One server's slices at one level: their sum, and CPU per request of the processes `cpu` reads. */
  class Series {
    private runs: LoadResult[] = [];
    private cpu: number[] = [];
    constructor(
      private readonly target: { url: string; headers?: Record<string, string> },
      private readonly readCpu: () => number[],
    ) {}
    async slice(connections: number, seconds: number): Promise<void> {
      const before = this.readCpu();
      this.runs.push(await load({ ...this.target, connections, durationSec: seconds }));
      this.readCpu().forEach((v, j) => (this.cpu[j] = (this.cpu[j] ?? 0) + v - (before[j] ?? 0)));
    }
    /** Requests over time across the slices; p50/p99 are the slices' means. */
    result(): LoadResult {
      const sum = (f: (r: LoadResult) => number) => this.runs.reduce((acc, r) => acc + f(r), 0);
      const n = Math.max(1, this.runs.length);
      return {
        rps:
          sum((r) => r.total) /
          Math.max(
            1e-9,
            sum((r) => r.seconds),
          ),
        p50: sum((r) => r.p50) / n,
        p99: sum((r) => r.p99) / n,
        errors: sum((r) => r.errors),
        non2xx: sum((r) => r.non2xx),
        total: sum((r) => r.total),
        seconds: sum((r) => r.seconds),
      };
    }
    cpuUsPerRequest(): number[] {
      const total = Math.max(1, this.result().total);
      return this.cpu.map((ms) => (ms * 1000) / total);
    }
  }
  const sliceSec = DURATION_SEC / SLICES;
  for (let i = 0; i < ROUNDS; i++) {
    let round: Round | undefined;
    const lines: string[] = [];
    for (const connections of LEVELS) {
      const h = new Series({ url: `http://127.0.0.1:${hello.port}/` }, () => [cpuMs(hello.proc.pid), selfCpuMs()]);
      // CPU per request is robust to other load on the machine, unlike req/s: it shows where the time goes.
      const g = new Series({ url: gwUrl, headers }, () => [cpuMs(gwChild?.proc.pid), cpuMs(svcChild?.proc.pid), cpuMsByName("nats-server"), selfCpuMs()]);
      const f = floor ? new Series({ url: `http://127.0.0.1:${floor.port}/v1/participants` }, () => [cpuMs(floor.proc.pid)]) : undefined;
      for (let k = 0; k < SLICES; k++) {
        for (const series of k % 2 === 0 ? [h, f, g] : [g, f, h]) await series?.slice(connections, sliceSec);
      }
      const [helloRun, gwRun, floorRun] = [h.result(), countGw(g.result()), f?.result()];
      const [helloCpuUs = 0, helloClientCpuUs = 0] = h.cpuUsPerRequest();
      const [gwCpuUs = 0, svcCpuUs = 0, natsCpuUs = 0, clientCpuUs = 0] = g.cpuUsPerRequest();
      const floorText = floorRun
        ? `, floor ${floorRun.rps.toFixed(0)} (${(f?.cpuUsPerRequest()[0] ?? 0).toFixed(0)} µs/req vs gateway ${gwCpuUs.toFixed(0)})`
        : "";
      lines.push(`${connections}: hello ${helloRun.rps.toFixed(0)}, gateway ${gwRun.rps.toFixed(0)}${floorText}`);
      const r: Round = round ?? {
        hello: { run: helloRun, connections },
        gw: { run: gwRun, connections },
        helloCpuUs,
        helloClientCpuUs,
        gwCpuUs,
        svcCpuUs,
        natsCpuUs,
        clientCpuUs,
      };
      if (helloRun.rps >= r.hello.run.rps) Object.assign(r, { hello: { run: helloRun, connections }, helloCpuUs, helloClientCpuUs });
      if (gwRun.rps >= r.gw.run.rps) Object.assign(r, { gw: { run: gwRun, connections }, gwCpuUs, svcCpuUs, natsCpuUs, clientCpuUs });
      if (floorRun && floorRun.rps >= (r.floor?.run.rps ?? 0)) r.floor = { run: floorRun, connections };
      round = r;
    }
    if (round === undefined) throw new Error("no concurrency levels (BENCH_CONNECTIONS)");
    rounds.push(round);
    const floorText = round.floor ? `, floor ratio ${(round.floor.run.rps / round.hello.run.rps).toFixed(3)}` : "";
    console.log(`round ${i + 1}: req/s at ${lines.join("; ")} → ratio ${(round.gw.run.rps / round.hello.run.rps).toFixed(3)}${floorText}`);
  }
  rounds.sort((a, b) => a.gw.run.rps / a.hello.run.rps - b.gw.run.rps / b.hello.run.rps);
  const median = rounds[Math.floor(rounds.length / 2)];
  if (median === undefined) throw new Error("no rounds");
  const { hello: helloBest, gw: gwBest, helloCpuUs, helloClientCpuUs, gwCpuUs, svcCpuUs, natsCpuUs, clientCpuUs } = median;
  const [helloMax, gwMax] = [helloBest.run, gwBest.run];
  // Half the gateway's maximum rate, requests evenly spaced (what a caller sees when the gateway is not
  // saturated), against hello-world at the same rate (this machine's latency floor for one process answering)
  // and, with BENCH_FLOOR=1, the floor process (the tail any gateway on these parts would see here). Like the
  // maxima they alternate in BENCH_SLICES slices (G H F, then F H G, …), so all see the same moments of a
  // machine whose speed drifts; each one's percentiles are over all its slices' requests.
  const halfRate = Math.max(1, gwMax.rps / 2);
  for (const f of EXTRA_FRACTIONS) {
    const r = countGw(
      await pacedLoad({ url: gwUrl, headers, connections: gwBest.connections, durationSec: 10, rate: Math.max(1, gwMax.rps * f), timeline: TIMELINE }),
    );
    console.log(`open loop at ${(f * 100).toFixed(0)} % of the maximum: ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`);
  }
  const halfSlices: { gw: PacedResult[]; hello: PacedResult[]; floor: PacedResult[] } = { gw: [], hello: [], floor: [] };
  const gwBuckets0 = TIMELINE ? await httpDurationBuckets(gwHealth) : undefined;
  const halfSliceSec = Math.max(1, 10 / SLICES);
  const paced = (url: string, extra: { headers?: Record<string, string>; timeline?: boolean } = {}) =>
    pacedLoad({ url, ...extra, connections: gwBest.connections, durationSec: halfSliceSec, rate: halfRate });
  // CPU per request at half rate, by process (warm-ups included): under paced arrivals each turn carries few
  // requests, so this can be well above the figure at the maximum, where turns carry many. And each process's
  // share of the wall time on a CPU and runnable but waiting for one (its event loop; nats-server: all threads):
  // hello-world and its client have a core each, while the gateway's path is four busy processes on two.
  type Meter = { cpu: number[]; sched: SchedTimes[]; wallNs: number };
  const meter = (): Meter => ({ cpu: [], sched: [], wallNs: 0 });
  const halfMeters = { gw: meter(), hello: meter(), floor: meter() };
  const selfPid = process.pid;
  const gwProcs = () => ({
    cpu: [cpuMs(gwChild?.proc.pid), cpuMs(svcChild?.proc.pid), cpuMsByName("nats-server"), selfCpuMs()],
    sched: [schedTimes(gwChild?.proc.pid), schedTimes(svcChild?.proc.pid), schedTimes(infra.natsPid, true), schedTimes(selfPid)],
  });
  const measured = async (m: Meter, read: () => { cpu: number[]; sched: (SchedTimes | undefined)[] }, run: () => Promise<PacedResult>, to: PacedResult[]) => {
    const [before, t0] = [read(), process.hrtime.bigint()];
    const r = await run();
    const [after, t1] = [read(), process.hrtime.bigint()];
    after.cpu.forEach((v, j) => (m.cpu[j] = (m.cpu[j] ?? 0) + v - (before.cpu[j] ?? 0)));
    after.sched.forEach((v, j) => {
      const b = before.sched[j];
      const acc = (m.sched[j] ??= { run: 0, wait: 0 });
      if (v && b) [acc.run, acc.wait] = [acc.run + v.run - b.run, acc.wait + v.wait - b.wait];
    });
    m.wallNs += Number(t1 - t0);
    to.push(r);
  };
  for (let k = 0; k < SLICES; k++) {
    const steps: (() => Promise<void>)[] = [
      () => measured(halfMeters.gw, gwProcs, () => paced(gwUrl, { headers, timeline: TIMELINE }), halfSlices.gw),
      () =>
        measured(
          halfMeters.hello,
          () => ({ cpu: [cpuMs(hello.proc.pid)], sched: [schedTimes(hello.proc.pid), schedTimes(selfPid)] }),
          () => paced(`http://127.0.0.1:${hello.port}/`),
          halfSlices.hello,
        ),
      ...(floor
        ? [
            () =>
              measured(
                halfMeters.floor,
                () => ({ cpu: [cpuMs(floor.proc.pid)], sched: [schedTimes(floor.proc.pid), schedTimes(selfPid)] }),
                () => paced(`http://127.0.0.1:${floor.port}/v1/participants`),
                halfSlices.floor,
              ),
          ]
        : []),
    ];
    for (const step of k % 2 === 0 ? steps : steps.reverse()) await step();
  }
  const half = countGw(mergePaced(halfSlices.gw));
  const helloSameRate = mergePaced(halfSlices.hello);
  const floorSameRate = floor ? mergePaced(halfSlices.floor) : undefined;
  if (gwBuckets0) {
    // The gateway's own measure (fastify onRequest → response sent), over its slices and their 1 s warm-ups:
    // a tail the client sees but the gateway does not was spent outside its handling (sockets, scheduling).
    const after = await httpDurationBuckets(gwHealth);
    const count = (le: string) => (after.get(le) ?? 0) - (gwBuckets0.get(le) ?? 0);
    const all = count("+Inf");
    const over = (le: string) => `${(((all - count(le)) / Math.max(1, all)) * 100).toFixed(2)} % over ${Number(le) * 1000} ms`;
    console.log(`  inside the gateway (its http_request_duration_seconds): ${all} requests, ${["0.005", "0.01", "0.025"].map(over).join(", ")}`);
  }

  const ratio = gwMax.rps / helloMax.rps;
  console.log("profile                              req/s      p50 ms   p99 ms   errors  non2xx");
  const row = (name: string, r: typeof gwMax) =>
    console.log(
      `${name.padEnd(36)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${String(r.errors).padStart(8)} ${String(r.non2xx).padStart(7)}`,
    );
  row(`fastify hello-world, ${helloBest.connections} conns`, helloMax);
  row(`gateway+NATS+service, ${gwBest.connections} conns`, gwMax);
  row("gateway at 50% of max, open loop", half);
  row("hello-world at that rate, open loop", helloSameRate);
  if (floorSameRate) row("floor at that rate, open loop", floorSameRate);
  const us = (v: number) => `${v.toFixed(0)} µs`;
  console.log(
    `CPU per request (median round, each at its best level): hello ${us(helloCpuUs)} + load client ${us(helloClientCpuUs)}; gateway ${us(gwCpuUs)} + service ${us(svcCpuUs)} + nats-server ${us(natsCpuUs)} + load client ${us(clientCpuUs)}`,
  );
  // Each paced slice also sends a 1 s warm-up at the same rate (bench/lib.ts pacedLoad): its requests count too.
  const perReq = (ms: number | undefined, results: PacedResult[]) =>
    us(((ms ?? 0) * 1000) / Math.max(1, results.reduce((a, r) => a + r.total, 0) * (1 + 1 / halfSliceSec)));
  const [hg, hs, hn, hc] = halfMeters.gw.cpu;
  console.log(
    `CPU per request at half rate: gateway ${perReq(hg, halfSlices.gw)} + service ${perReq(hs, halfSlices.gw)} + nats-server ${perReq(hn, halfSlices.gw)} + load client ${perReq(hc, halfSlices.gw)}; hello ${perReq(halfMeters.hello.cpu[0], halfSlices.hello)}${floor ? `; floor ${perReq(halfMeters.floor.cpu[0], halfSlices.floor)}` : ""}`,
  );
  const shares = (m: Meter, names: string[]) =>
    names
      .map((name, j) => {
        const t = m.sched[j];
        const pct = (ns: number) => ((ns / Math.max(1, m.wallNs)) * 100).toFixed(0);
        return t && t.run + t.wait > 0 ? `${name} ${pct(t.run)} / ${pct(t.wait)} %` : undefined;
      })
      .filter(Boolean)
      .join(", ");
  const gwShares = shares(halfMeters.gw, ["gateway", "service", "nats-server (all threads)", "load client"]);
  if (gwShares) {
    const floorShares = floor ? `; floor: ${shares(halfMeters.floor, ["floor", "load client"])}` : "";
    console.log(
      `share of wall time at half rate on a CPU / runnable but waiting for one (event loops): gateway path: ${gwShares}; hello: ${shares(halfMeters.hello, ["hello", "load client"])}${floorShares}`,
    );
  }
  console.log(`ratio gateway/hello = ${ratio.toFixed(3)} (target ≥ 0.35); p99 at half rate = ${half.p99.toFixed(1)} ms (target < 20 ms)`);
  if (gwErrors > 0) console.log(`warning: ${gwErrors} answers outside 2xx or failed requests during the gateway runs`);
  const ms = (v: number) => Number(v.toFixed(1));
  console.log(
    JSON.stringify({
      gateway_rps: Math.round(gwMax.rps),
      hello_rps: Math.round(helloMax.rps),
      ratio: Number(ratio.toFixed(3)),
      p50_ms: ms(half.p50),
      p99_ms: ms(half.p99),
      gateway_connections: gwBest.connections,
      hello_connections: helloBest.connections,
      hello_same_rate_p99_ms: ms(helloSameRate.p99),
      ...(floorSameRate ? { floor_same_rate_p99_ms: ms(floorSameRate.p99) } : {}),
      errors: gwErrors,
    }),
  );
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}

/** The gateway's cumulative http_request_duration_seconds buckets for GET /v1/participants 200, by `le`. */
async function httpDurationBuckets(healthPort: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^http_request_duration_seconds_bucket\{([^}]*)\} (\d+)/gm)) {
    const labels = m[1] ?? "";
    if (!labels.includes('status="200"') || !labels.includes("participants")) continue;
    const le = /le="([^"]+)"/.exec(labels)?.[1];
    if (le !== undefined) out.set(le, (out.get(le) ?? 0) + Number(m[2]));
  }
  return out;
}
