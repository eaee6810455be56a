/**
 * npm run bench:gateway — gateway throughput and latency against a bare Fastify hello-world on the same
 * machine in the same run. The gateway route is authenticated (API key lookup, scope, rate limit, validation)
 * and makes a NATS request/reply to a trivial service handler. Last line: one JSON object of the figures.
 *
 *   BENCH_ROUNDS (5) alternating rounds of BENCH_DURATION_SEC (5) each; BENCH_CONNECTIONS (64);
 *   BENCH_GATEWAY_NODE_OPTIONS: V8/Node flags for the gateway process (default: as deployed; "" for none);
 *   BENCH_FLOOR=1: each round also measures bench/floor.ts, Fastify plus the same NATS round trip and nothing
 *   else (the most a gateway on these parts could do).
 */
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { freePort } from "@treasury/testing";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { adminSql, GATEWAY_NODE_OPTIONS, nodeOptions, cpuMs, cpuMsByName, load, startChild, startInfra, type Child, type LoadResult } from "./lib.ts";

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
/** Alternating hello/gateway rounds (BENCH_ROUNDS); the median round's figures are reported. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
// 64 keep-alive connections for both servers (BENCH_CONNECTIONS): a marketplace's traffic arrives on many
// connections at once, and the gateway sends the NATS requests of one event-loop turn in one write.
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const FLOOR = process.env.BENCH_FLOOR === "1";

const infra = await startInfra();
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
  children.push(await startChild("bench/trivial-service.ts", { ...common, DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "ledger"), HEALTH_PORT: String(svcHealth) }, `http://127.0.0.1:${svcHealth}/readyz`));
  children.push(
    await startChild(
      "services/gateway/src/main.ts",
      { ...common, DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "gateway"), PORT: String(gwPort), ALT_PORT: String(altPort), HEALTH_PORT: String(gwHealth), ...nodeOptions(GATEWAY_NODE_OPTIONS) },
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

  // Warm up both (JIT, pools), then measure at full load.
  await load({ url: gwUrl, headers, connections: CONNECTIONS, durationSec: 3 });
  await load({ url: `http://127.0.0.1:${hello.port}/`, connections: CONNECTIONS, durationSec: 3 });
  // The machine's speed drifts (a shared host): hello and gateway are measured in alternating rounds and each
  // round's ratio compares two runs seconds apart; the median round is reported.
  const [svcChild, gwChild] = children;
  const rounds: { hello: LoadResult; gw: LoadResult; helloCpuUs: number; gwCpuUs: number; svcCpuUs: number; natsCpuUs: number; clientCpuUs: number; helloClientCpuUs: number }[] = [];
  const selfCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  for (let i = 0; i < ROUNDS; i++) {
    const helloCpu0 = [cpuMs(hello.proc.pid), selfCpuMs()];
    const helloRun = await load({ url: `http://127.0.0.1:${hello.port}/`, connections: CONNECTIONS, durationSec: DURATION_SEC });
    if (floor) {
      const floorCpu0 = cpuMs(floor.proc.pid);
      const floorRun = await load({ url: `http://127.0.0.1:${floor.port}/v1/participants`, connections: CONNECTIONS, durationSec: DURATION_SEC });
      const floorCpuUs = ((cpuMs(floor.proc.pid) - floorCpu0) * 1000) / floorRun.total;
      console.log(`round ${i + 1}: floor (Fastify + NATS round trip only) ${floorRun.rps.toFixed(0)} req/s, ratio ${(floorRun.rps / helloRun.rps).toFixed(3)}, ${floorCpuUs.toFixed(0)} µs CPU per request in its process`);
    }
    const [helloCpuUs, helloClientCpuUs] = [cpuMs(hello.proc.pid), selfCpuMs()].map((v, j) => ((v - (helloCpu0[j] ?? 0)) * 1000) / helloRun.total);
    const processes = () => [cpuMs(gwChild?.proc.pid), cpuMs(svcChild?.proc.pid), cpuMsByName("nats-server"), selfCpuMs()];
    const cpu0 = processes();
    const gwRun = await load({ url: gwUrl, headers, connections: CONNECTIONS, durationSec: DURATION_SEC });
    // CPU per request is robust to other load on the machine, unlike req/s: it shows where the time goes.
    const [gwCpuUs, svcCpuUs, natsCpuUs, clientCpuUs] = processes().map((v, j) => ((v - (cpu0[j] ?? 0)) * 1000) / gwRun.total);
    rounds.push({ hello: helloRun, gw: gwRun, helloCpuUs: helloCpuUs ?? 0, helloClientCpuUs: helloClientCpuUs ?? 0, gwCpuUs: gwCpuUs ?? 0, svcCpuUs: svcCpuUs ?? 0, natsCpuUs: natsCpuUs ?? 0, clientCpuUs: clientCpuUs ?? 0 });
    console.log(`round ${i + 1}: hello ${helloRun.rps.toFixed(0)} req/s, gateway ${gwRun.rps.toFixed(0)} req/s, ratio ${(gwRun.rps / helloRun.rps).toFixed(3)}`);
  }
  rounds.sort((a, b) => a.gw.rps / a.hello.rps - b.gw.rps / b.hello.rps);
  const median = rounds[Math.floor(rounds.length / 2)];
  if (median === undefined) throw new Error("no rounds");
  const { hello: helloMax, gw: gwMax, helloCpuUs, helloClientCpuUs, gwCpuUs, svcCpuUs, natsCpuUs, clientCpuUs } = median;
  // Latency at half the maximum rate: what a service sees when it is not saturated.
  const half = await load({ url: gwUrl, headers, connections: CONNECTIONS, durationSec: 10, overallRate: Math.max(1, Math.floor(gwMax.rps / 2)) });

  const ratio = gwMax.rps / helloMax.rps;
  console.log("profile                              req/s      p50 ms   p99 ms   errors  non2xx");
  const row = (name: string, r: typeof gwMax) => console.log(`${name.padEnd(36)} ${r.rps.toFixed(0).padStart(8)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(8)} ${String(r.errors).padStart(8)} ${String(r.non2xx).padStart(7)}`);
  row("fastify hello-world (median round)", helloMax);
  row("gateway+NATS+service (median round)", gwMax);
  row("gateway at 50% of max", half);
  const us = (v: number) => `${v.toFixed(0)} µs`;
  console.log(`CPU per request (median round): hello ${us(helloCpuUs)} + load client ${us(helloClientCpuUs)}; gateway ${us(gwCpuUs)} + service ${us(svcCpuUs)} + nats-server ${us(natsCpuUs)} + load client ${us(clientCpuUs)}`);
  console.log(`ratio gateway/hello = ${ratio.toFixed(3)} (target ≥ 0.35); p99 at half rate = ${half.p99} ms (target < 20 ms)`);
  if (rounds.some((r) => r.gw.non2xx + r.gw.errors > 0) || half.non2xx > 0) console.log("warning: non-2xx answers during the gateway runs");
  console.log(JSON.stringify({ gateway_rps: Math.round(gwMax.rps), hello_rps: Math.round(helloMax.rps), ratio: Number(ratio.toFixed(3)), p50_ms: half.p50, p99_ms: half.p99 }));
} finally {
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
}
