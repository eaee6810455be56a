/**
 * `npm run soak` (on demand, not in CI): the private stack of the fault runs (bench/chaos-stack.ts) under steady
 * checkout, refund and payout traffic at half its maximum rate for a long time, sampling each service process's
 * resident memory (/proc) and event-loop delay (its /metrics) to find what grows. Prints per service the slope of
 * both over the run (after a warm-up), every error seen (failed requests, 500s, processes that died), and the
 * ledger's invariants at the end. Last line: one JSON object.
 *
 *   --duration S   seconds of load at half rate (default 1800)
 *   --seed N       traffic (default 1)
 *   --rate R       flows per second instead of half the measured maximum
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import { CREATOR_PERCENT, FULL_PLAN, setUp, STACK_ENV } from "./chaos-run.ts";
import { client, isRetryable, Load } from "./chaos-load.ts";
import { startChaosStack, type Instance } from "./chaos-stack.ts";
import { adminSql } from "./lib.ts";
import { WebhookReceiver } from "./webhook-receiver.ts";

const SAMPLE_INTERVAL_MS = 10_000;
/** Closed-loop clients and seconds of the maximum-rate measurement. */
const MAX_RATE_CONCURRENCY = 16;
const MAX_RATE_SEC = 20;
/** Samples from the first part of the run are left out of the slopes: pools, JIT and caches fill then. */
const WARMUP_SHARE = 0.1;

const { values } = parseArgs({ options: { duration: { type: "string", default: "1800" }, seed: { type: "string", default: "1" }, rate: { type: "string" } } });
const duration = Number(values.duration);
const seed = Number(values.seed);
if (!(duration > 0) || !Number.isInteger(seed) || (values.rate !== undefined && !(Number(values.rate) > 0))) {
  console.error("usage: npm run soak -- [--duration SECONDS] [--seed N] [--rate FLOWS_PER_SECOND]");
  process.exit(2);
}

interface Sample {
  at: number;
  pid: number;
  rssMb: number;
  lagP99Ms: number;
  lagMaxMs: number;
}

function rssMb(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m === null ? Number.NaN : Number(m[1]) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** Event-loop delay since the previous scrape (the kit's metrics reset the histogram on each one). */
async function eventLoopDelay(port: number): Promise<{ p99: number; max: number }> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => r.text(),
    () => "",
  );
  const value = (metric: string) => Number(new RegExp(`^${metric}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, "m").exec(text)?.[1] ?? Number.NaN) * 1000;
  return { p99: value("nodejs_eventloop_lag_p99_seconds"), max: value("nodejs_eventloop_lag_max_seconds") };
}

/** Least-squares slope of y over x (per hour when x is in seconds), NaN for fewer than two points. */
function slopePerHour(points: [number, number][]): number {
  const pts = points.filter(([, y]) => Number.isFinite(y));
  if (pts.length < 2) return Number.NaN;
  const mx = pts.reduce((s, [x]) => s + x, 0) / pts.length;
  const my = pts.reduce((s, [, y]) => s + y, 0) / pts.length;
  const sxx = pts.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = pts.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  return sxx === 0 ? Number.NaN : (sxy / sxx) * 3600;
}

function mean(xs: number[]): number {
  const finite = xs.filter((x) => Number.isFinite(x));
  return finite.length === 0 ? Number.NaN : finite.reduce((t, x) => t + x, 0) / finite.length;
}

async function sample(instances: Instance[], samples: Map<string, Sample[]>, at: number): Promise<void> {
  for (const inst of instances) {
    const pid = inst.proc?.pid;
    if (pid === undefined) continue;
    const lag = await eventLoopDelay(inst.healthPort);
    const list = samples.get(inst.id) ?? [];
    list.push({ at, pid, rssMb: rssMb(pid), lagP99Ms: lag.p99, lagMaxMs: lag.max });
    samples.set(inst.id, list);
  }
}

const receiver = await WebhookReceiver.start();
console.log("starting the stack");
const stack = await startChaosStack({ services: FULL_PLAN, env: STACK_ENV });
const sql = adminSql(stack.adminUrl);
try {
  const { apiKey, participants } = await setUp(stack, receiver);
  const c = client(stack.gatewayUrl, apiKey);
  const load = new Load({ client: c, seed, rate: 1, participants, creatorPercent: CREATOR_PERCENT });
  let rate = Number(values.rate);
  if (values.rate === undefined) {
    const max = await load.closedLoop(MAX_RATE_CONCURRENCY, MAX_RATE_SEC);
    rate = Math.max(1, Math.round((max / 2) * 10) / 10);
    console.log(`maximum rate: ${max.toFixed(1)} flows/s with ${MAX_RATE_CONCURRENCY} clients; soaking at ${rate} flows/s for ${duration} s`);
  }
  const soak = new Load({ client: c, seed: seed + 1, rate, participants, creatorPercent: CREATOR_PERCENT });
  const samples = new Map<string, Sample[]>();
  soak.start();
  const until = soak.now() + duration;
  while (soak.now() < until) {
    await new Promise((r) => setTimeout(r, Math.min(SAMPLE_INTERVAL_MS, (until - soak.now()) * 1000)));
    await sample(stack.instances, samples, soak.now());
    const failed = soak.attempts.filter((a) => isRetryable(a.status)).length;
    console.log(
      `${soak.now().toFixed(0).padStart(5)} s: ${soak.flows.length} flows, ${failed} failed requests, rss ${stack.instances.map((i) => `${i.id} ${(samples.get(i.id)?.at(-1)?.rssMb ?? Number.NaN).toFixed(0)}`).join(" ")} MB`,
    );
  }
  await soak.stop();

  const from = duration * WARMUP_SHARE;
  const rows = stack.instances.map((inst) => {
    const all = samples.get(inst.id) ?? [];
    const lastPid = all.at(-1)?.pid;
    // Only the process that ran at the end: a restart would show as a drop.
    const xs = all.filter((s) => s.at >= from && s.pid === lastPid);
    return {
      service: inst.id,
      rss_mb_first: Number((xs[0]?.rssMb ?? Number.NaN).toFixed(1)),
      rss_mb_last: Number((xs.at(-1)?.rssMb ?? Number.NaN).toFixed(1)),
      rss_mb_per_hour: Number(slopePerHour(xs.map((s) => [s.at, s.rssMb])).toFixed(1)),
      lag_p99_ms_mean: Number(mean(xs.map((s) => s.lagP99Ms)).toFixed(1)),
      lag_p99_ms_per_hour: Number(slopePerHour(xs.map((s) => [s.at, s.lagP99Ms])).toFixed(1)),
      lag_max_ms: Number(Math.max(0, ...xs.map((s) => (Number.isFinite(s.lagMaxMs) ? s.lagMaxMs : 0))).toFixed(1)),
      restarts: inst.starts - 1,
    };
  });
  console.log("service       rss MB first → last   MB/hour   event-loop p99 ms (mean, per hour)   max ms   restarts");
  for (const r of rows) {
    console.log(
      `${r.service.padEnd(12)} ${r.rss_mb_first.toFixed(0).padStart(8)} → ${r.rss_mb_last.toFixed(0).padEnd(6)} ${r.rss_mb_per_hour.toFixed(1).padStart(9)}   ${r.lag_p99_ms_mean.toFixed(1).padStart(14)} ${r.lag_p99_ms_per_hour.toFixed(1).padStart(12)}        ${r.lag_max_ms.toFixed(0).padStart(8)} ${String(r.restarts).padStart(10)}`,
    );
  }
  const failed = soak.attempts.filter((a) => isRetryable(a.status));
  const errorKinds = new Map<string, number>();
  for (const a of failed)
    errorKinds.set(`${a.step} ${a.status} ${a.code ?? ""}`.trim(), (errorKinds.get(`${a.step} ${a.status} ${a.code ?? ""}`.trim()) ?? 0) + 1);
  const refused = soak.flows.filter((f) => f.state === "refused");
  for (const f of refused.slice(0, 5))
    errorKinds.set(
      `${f.kind} refused ${f.lastStatus} ${f.lastCode ?? ""}`.trim(),
      (errorKinds.get(`${f.kind} refused ${f.lastStatus} ${f.lastCode ?? ""}`.trim()) ?? 0) + 1,
    );
  const crashes = stack.instances.flatMap((i) => i.crashes.map((x) => `${i.id}: ${x}`));
  const invariants = await checkInvariants(sql);
  const flows = {
    total: soak.flows.length,
    ok: soak.flows.filter((f) => f.state === "ok").length,
    refused: refused.length,
    failed: soak.flows.filter((f) => f.state === "failed").length,
  };
  console.log(
    `flows: ${flows.total} (${flows.ok} ok, ${flows.refused} refused, ${flows.failed} failed), ${soak.attempts.length} requests, ${failed.length} failed, ${soak.skipped} not started`,
  );
  console.log(`errors: ${errorKinds.size === 0 ? "none" : [...errorKinds].map(([k, n]) => `${k} ×${n}`).join(", ")}`);
  console.log(
    `processes that died on their own: ${crashes.length === 0 ? "none" : crashes.join("; ")}; ledger invariants ${invariants.ok ? "ok" : `FAILED (${invariants.violations.length})`}`,
  );
  console.log(
    JSON.stringify({
      duration_s: duration,
      rate,
      flows,
      failed_requests: failed.length,
      http_500: failed.filter((a) => a.status === 500).length,
      errors: Object.fromEntries(errorKinds),
      crashes,
      invariants: invariants.ok ? "ok" : "failed",
      services: rows,
    }),
  );
  await c.close();
  if (failed.length > 0 || crashes.length > 0 || !invariants.ok) process.exitCode = 1;
} finally {
  await sql.end({ timeout: 5 });
  await stack.stop();
  await receiver.close();
}
