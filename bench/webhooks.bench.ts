/**
 * Webhook delivery benchmark: the webhooks service as its own process on a private PostgreSQL + NATS. This
 * process plays the emitting service: it commits events to an outbox with `withTx` and runs that outbox's
 * relay, woken right after COMMIT as in every service (relay → EVENTS → fan-out → delivery workers). A local
 * HTTP receiver checks every signature with the standardwebhooks library.
 *   1. latency: 5,000 events, one transaction each, paced (BENCH_RATE/s): commit → 2xx p50/p99;
 *   2. throughput: 5,000 events committed in a burst: deliveries/s from first commit to last 2xx;
 *   3. outage: the receiver answers 503 for 30 s while events keep coming, then recovers: drain rate of the
 *      backlog from recovery to the last 2xx.
 *   4. ordering: the same burst (BENCH_ORDERED_EVENTS) to one unordered endpoint, then to one endpoint with
 *      `ordering: per_endpoint`: deliveries/s of each, and how many of the ordered ones arrived out of order (0).
 * Last line: {"p50_ms", "p99_ms", "deliveries_per_s", "drain_per_s", "unordered_per_s", "ordered_per_s",
 * "ordered_inversions", "lost", "errors"}; `errors` counts the delivery
 * attempts that failed (an answer outside 2xx, a timeout, a refused connection) for the events committed outside the
 * outage, where the receiver answers every good request with 204 and a failed attempt is a fault of the path.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { newId } from "@treasury/contracts";
import {
  BaseEnv,
  connectNats,
  createLogger,
  ensureEventsStream,
  generateKeyRingEntry,
  OutboxRelay,
  serviceDatabaseUrl,
  withTx,
  writeOutbox,
} from "@treasury/service-kit";
import { freePort } from "@treasury/testing";
import postgres from "postgres";
import { startInfra } from "./lib.ts";
import { startChild, type Child } from "./lib/processes.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const RATE_PER_S = Number(process.env.BENCH_RATE ?? 250);
const OUTAGE_MS = Number(process.env.BENCH_OUTAGE_MS ?? 30_000);
const OUTAGE_EVENTS = Number(process.env.BENCH_OUTAGE_EVENTS ?? 2_000);
const ORDERED_EVENTS = Number(process.env.BENCH_ORDERED_EVENTS ?? 2_000);
const BURST_TX_EVENTS = 100;
const WAIT_MAX_MS = 120_000;
/** Short enough that a 30 s outage ends within the attempts; the production schedule is hours long. */
const BENCH_SCHEDULE_MS = "0,1000,2000,4000,8000,15000,15000,15000,15000,15000";

const ORG = `org_bench_${randomBytes(4).toString("hex")}`;
/** One endpoint each, for the ordering phase. */
const ORG_UNORDERED = `${ORG}_u`;
const ORG_ORDERED = `${ORG}_o`;
const SECRET = `whsec_${randomBytes(24).toString("base64")}`;
const verifier = new Webhook(SECRET);

/** First 2xx receipt time per event id, and what went wrong on the way. */
const firstOk = new Map<string, number>();
let receipts = 0;
let badSignatures = 0;
let down = false;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    receipts += 1;
    if (down) return void res.writeHead(503).end();
    const body = Buffer.concat(chunks).toString("utf8");
    let id: string;
    try {
      id = (verifier.verify(body, req.headers as Record<string, string>) as { id: string }).id;
    } catch {
      badSignatures += 1;
      return void res.writeHead(400).end("bad signature");
    }
    if (!firstOk.has(id)) firstOk.set(id, performance.now());
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30_000;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** BENCH_VERBOSE=1 prints each stage's progress every second while waiting (outbox → fan-out → delivered). */
const VERBOSE = process.env.BENCH_VERBOSE === "1";
let progress: (() => Promise<string>) | undefined;

async function waitDelivered(ids: string[], deadlineMs: number): Promise<number> {
  const until = Date.now() + deadlineMs;
  let nextReport = Date.now() + 1000;
  for (;;) {
    const missing = ids.filter((id) => !firstOk.has(id)).length;
    if (missing === 0 || Date.now() > until) return missing;
    if (VERBOSE && progress && Date.now() > nextReport) {
      nextReport = Date.now() + 1000;
      console.log(`  waiting for ${missing}: ${await progress()}`);
    }
    await sleep(20);
  }
}

/** A burst of `count` events of `org`, committed in order; deliveries/s from the first commit to the last 2xx. */
async function burstTo(
  commit: (n: number, org?: string) => Promise<string[]>,
  org: string,
  count: number,
): Promise<{ ids: string[]; perS: number; lost: number }> {
  const ids: string[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i += BURST_TX_EVENTS) ids.push(...(await commit(Math.min(BURST_TX_EVENTS, count - i), org)));
  const lost = await waitDelivered(ids, WAIT_MAX_MS);
  const end = Math.max(...ids.map((id) => firstOk.get(id) ?? 0));
  return { ids, perS: (ids.length - lost) / ((end - start) / 1000), lost };
}

/** Phase 4: unordered then ordered, one endpoint each; an ordered event acknowledged before an earlier one is an inversion. */
async function orderingPhase(
  commit: (n: number, org?: string) => Promise<string[]>,
): Promise<{ unordered: number; ordered: number; inversions: number; lost: number }> {
  const unordered = await burstTo(commit, ORG_UNORDERED, ORDERED_EVENTS);
  const ordered = await burstTo(commit, ORG_ORDERED, ORDERED_EVENTS);
  let inversions = 0;
  for (let i = 1; i < ordered.ids.length; i++) {
    const prev = firstOk.get(ordered.ids[i - 1] as string);
    const cur = firstOk.get(ordered.ids[i] as string);
    if (prev !== undefined && cur !== undefined && cur < prev) inversions += 1;
  }
  return { unordered: unordered.perS, ordered: ordered.perS, inversions, lost: unordered.lost + ordered.lost };
}

const infra = await startInfra();
const children: Child[] = [];
const stops: Array<() => Promise<void>> = [];
const sql = postgres(infra.adminUrl, { max: 10, onnotice: () => {} });
try {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  await sql`insert into webhooks.endpoints (id, org_id, livemode, url, events, secret) values (${newId("we")}, ${ORG}, false, ${url}, ${["*"]}, ${SECRET})`;
  for (const [org, ordering] of [
    [ORG_UNORDERED, "none"],
    [ORG_ORDERED, "per_endpoint"],
  ] as const) {
    await sql`insert into webhooks.endpoints (id, org_id, livemode, url, events, secret, ordering)
      values (${newId("we")}, ${org}, false, ${url}, ${["*"]}, ${SECRET}, ${ordering})`;
  }

  // The emitting side's relay starts first, so it holds the relay lock of this outbox.
  const nc = await connectNats({ url: infra.natsUrl, name: "bench" });
  await ensureEventsStream(nc, "");
  // The relay waits after each wake-up as every service's does (OUTBOX_COALESCE_MS, its default unless set).
  const coalesceMs = BaseEnv.shape.OUTBOX_COALESCE_MS.parse(process.env.OUTBOX_COALESCE_MS);
  const relay = new OutboxRelay({
    sql,
    nc,
    schema: "webhooks",
    prefix: "",
    // The events are payouts' (payout.executed): the fan-out delivers only what an event's owner emitted.
    source: "payouts",
    coalesceMs,
    log: createLogger({ service: "bench", level: "warn" }),
  });
  await relay.start();
  if (!relay.isLeader()) throw new Error("the benchmark's relay did not take the outbox lock");
  stops.push(async () => {
    await relay.stop();
    await nc.close();
  });

  const health = await freePort();
  children.push(
    await startChild(
      "services/webhooks/src/main.ts",
      {
        DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "webhooks"),
        NATS_URL: infra.natsUrl,
        NATS_PREFIX: "",
        HEALTH_PORT: String(health),
        DB_POOL_MAX: "20",
        // More pullers on the fan-out durable than the default 4: the pool above has room for them.
        WEBHOOK_FANOUT_CONSUMERS: process.env.WEBHOOK_FANOUT_CONSUMERS ?? "8",
        WEBHOOK_RETRY_SCHEDULE_MS: BENCH_SCHEDULE_MS,
        WEBHOOK_POLL_INTERVAL_MS: "250",
        // The receiver listens on 127.0.0.1.
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        // The endpoint's clear secret inserted above is sealed by the service's start pass.
        WEBHOOK_SECRET_KEYS: generateKeyRingEntry("bench1"),
      },
      `http://127.0.0.1:${health}/readyz`,
    ),
  );

  progress = async () => {
    const [r] = await sql<{ unpublished: number; fanned: number; pending: number; delivered: number }[]>`
      select (select count(*)::int from webhooks.outbox where published_at is null) as unpublished,
             (select count(*)::int from webhooks.inbox) as fanned,
             (select count(*)::int from webhooks.deliveries where status in ('pending', 'retrying')) as pending,
             (select count(*)::int from webhooks.deliveries where status = 'delivered') as delivered`;
    return JSON.stringify(r);
  };
  const committedAt = new Map<string, number>();
  async function commit(n: number, org = ORG): Promise<string[]> {
    const ids = Array.from({ length: n }, () => newId("evt"));
    await withTx(sql, async (tx) => {
      for (const id of ids)
        await writeOutbox(tx, "webhooks", {
          id,
          type: "payout.executed",
          org_id: org,
          livemode: false,
          data: { payout_id: `po_${id.slice(4)}`, amount_cents: 1234 },
        });
    });
    const t = performance.now();
    for (const id of ids) committedAt.set(id, t);
    return ids;
  }

  // Warm-up: connections, JIT, keep-alive sockets.
  const warm = await Promise.all(Array.from({ length: 20 }, () => commit(1)));
  await waitDelivered(warm.flat(), WAIT_MAX_MS);

  // 1. Latency at a steady rate.
  const paced: string[] = [];
  const startedPaced = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < EVENTS; i++) {
    const due = startedPaced + (i * 1000) / RATE_PER_S;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const p = commit(1).then((ids) => void paced.push(...ids));
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  await Promise.all(inFlight);
  const lostPaced = await waitDelivered(paced, WAIT_MAX_MS);
  const latencies = paced
    .filter((id) => firstOk.has(id))
    .map((id) => (firstOk.get(id) as number) - (committedAt.get(id) as number))
    .sort((a, b) => a - b);
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);

  // 2. Throughput: a burst committed as fast as possible.
  const burst: string[] = [];
  const burstStart = performance.now();
  for (let i = 0; i < EVENTS; i += BURST_TX_EVENTS) burst.push(...(await commit(Math.min(BURST_TX_EVENTS, EVENTS - i))));
  const burstCommitted = performance.now();
  const lostBurst = await waitDelivered(burst, WAIT_MAX_MS);
  const burstEnd = Math.max(...burst.map((id) => firstOk.get(id) ?? 0));
  const deliveriesPerS = (burst.length - lostBurst) / ((burstEnd - burstStart) / 1000);

  // 3. Outage: 503 for OUTAGE_MS while events keep coming, then recovery and drain.
  down = true;
  const outageStart = performance.now();
  const outage: string[] = [];
  const outageRate = OUTAGE_EVENTS / Math.max(1, OUTAGE_MS / 3000);
  for (let i = 0; i < OUTAGE_EVENTS; i++) {
    const due = outageStart + (i * 1000) / outageRate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    outage.push(...(await commit(1)));
  }
  await sleep(Math.max(0, outageStart + OUTAGE_MS - performance.now()));
  const receiptsDuringOutage = receipts;
  down = false;
  const recoveredAt = performance.now();
  const lostOutage = await waitDelivered(outage, WAIT_MAX_MS);
  const drainEnd = Math.max(...outage.map((id) => firstOk.get(id) ?? 0));
  const drainPerS = (outage.length - lostOutage) / ((drainEnd - recoveredAt) / 1000);

  // 4. Ordering: one burst to an unordered endpoint, the same to an ordered one, committed in order.
  const ordering = await orderingPhase(commit);

  if (VERBOSE) {
    // Where the paced events spent their time (database clocks): outbox → stream → fan-out → settled.
    const [stages] = await sql<Record<string, number>[]>`
      select percentile_cont(0.5) within group (order by extract(epoch from o.published_at - o.created_at) * 1000)::float8 as relay_p50_ms,
             percentile_cont(0.5) within group (order by extract(epoch from d.created_at - o.published_at) * 1000)::float8 as fanout_p50_ms,
             percentile_cont(0.5) within group (order by extract(epoch from d.delivered_at - d.created_at) * 1000)::float8 as deliver_p50_ms,
             percentile_cont(0.99) within group (order by extract(epoch from o.published_at - o.created_at) * 1000)::float8 as relay_p99_ms,
             percentile_cont(0.99) within group (order by extract(epoch from d.created_at - o.published_at) * 1000)::float8 as fanout_p99_ms,
             percentile_cont(0.99) within group (order by extract(epoch from d.delivered_at - d.created_at) * 1000)::float8 as deliver_p99_ms
      from webhooks.outbox o join webhooks.deliveries d on d.event_id = o.id
      where o.id in ${sql(paced)}`;
    console.log("  paced stages:", JSON.stringify(stages));
  }
  const lost = lostPaced + lostBurst + lostOutage + ordering.lost;
  const [attempts] = await sql<{ p50: number; p99: number }[]>`
    select percentile_cont(0.5) within group (order by response_time_ms)::float8 as p50,
           percentile_cont(0.99) within group (order by response_time_ms)::float8 as p99
    from webhooks.deliveries where status = 'delivered'`;
  console.log(`HTTP attempt time as the sender measured it: p50 ${attempts?.p50.toFixed(1)} ms, p99 ${attempts?.p99.toFixed(1)} ms`);
  console.log(
    `events: ${paced.length} paced at ${RATE_PER_S}/s, ${burst.length} burst, ${outage.length} during a ${OUTAGE_MS / 1000} s outage; receiver saw ${receipts} requests (${receiptsDuringOutage} by the end of the outage)`,
  );
  console.log(`commit → 2xx latency at ${RATE_PER_S}/s: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (targets ≤ 25 / ≤ 250 ms)`);
  console.log(
    `burst: ${EVENTS} events committed in ${((burstCommitted - burstStart) / 1000).toFixed(2)} s, delivered at ${deliveriesPerS.toFixed(0)} deliveries/s`,
  );
  console.log(
    `drain after the outage: ${outage.length - lostOutage} deliveries in ${((drainEnd - recoveredAt) / 1000).toFixed(2)} s = ${drainPerS.toFixed(0)}/s (retry schedule ${BENCH_SCHEDULE_MS} ms)`,
  );
  // Every attempt beyond an event's first, outside the outage, followed a failed one.
  const steady = [...paced, ...burst];
  const [failedAttempts] = await sql<{ n: string }[]>`
    select coalesce(sum(greatest(attempts - 1, 0)), 0)::text as n from webhooks.deliveries where event_id in ${sql(steady)}`;
  const errors = Number(failedAttempts?.n ?? 0);
  console.log(
    `ordering: ${ORDERED_EVENTS} events to one endpoint: unordered ${ordering.unordered.toFixed(0)}/s, per_endpoint ${ordering.ordered.toFixed(0)}/s (${(ordering.ordered / ordering.unordered).toFixed(2)}×); out of order: ${ordering.inversions}`,
  );
  console.log(`bad signatures: ${badSignatures}; lost: ${lost}; failed attempts outside the outage: ${errors}`);
  console.log(
    JSON.stringify({
      p50_ms: Number(p50.toFixed(1)),
      p99_ms: Number(p99.toFixed(1)),
      deliveries_per_s: Math.round(deliveriesPerS),
      drain_per_s: Math.round(drainPerS),
      unordered_per_s: Math.round(ordering.unordered),
      ordered_per_s: Math.round(ordering.ordered),
      ordered_inversions: ordering.inversions,
      lost,
      errors,
    }),
  );
} finally {
  for (const c of children.reverse()) await c.stop();
  for (const stop of stops.reverse()) await stop();
  await sql.end({ timeout: 5 });
  server.closeAllConnections();
  server.close();
  await infra.stop();
}
