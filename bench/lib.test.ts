/**
 * The benchmarks' open-loop client must pace evenly, count waits for a connection, and tell answers apart;
 * slices of it merge into one run with percentiles over all requests; the pgbench baseline runs at a scale of at
 * least its clients, at the benchmark's own client levels, and takes the best of them.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { bestPgbenchLevel, mergePaced, pacedLoad, pgbenchBaseline, pgbenchPlan, pgbenchThreads, type PacedResult, type PgbenchRun } from "./lib.ts";
import { schedTimes } from "./lib/processes.ts";

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** A server that records when each request arrived and answers after `delayMs` with `status`. */
async function serve(opts: { delayMs?: number; status?: number } = {}): Promise<{ url: string; arrivals: number[] }> {
  const arrivals: number[] = [];
  server = createServer((req, res) => {
    arrivals.push(performance.now());
    setTimeout(() => res.writeHead(opts.status ?? 200, { "content-type": "application/json" }).end(`{"path":${JSON.stringify(req.url)}}`), opts.delayMs ?? 0);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x?y=1`, arrivals };
}

describe("pacedLoad", () => {
  it("sends at an even rate, not in a burst at the start of each second", async () => {
    const { url, arrivals } = await serve();
    const r = await pacedLoad({ url, rate: 400, durationSec: 1, connections: 16 });
    expect(r.total).toBe(400);
    expect(r.errors + r.non2xx).toBe(0);
    // The measured second's arrivals (after the unmeasured warm-up second) spread over the whole second.
    const measured = arrivals.slice(-400);
    const start = measured[0] ?? 0;
    const firstHalf = measured.filter((t) => t - start < 500).length;
    expect(firstHalf).toBeGreaterThan(140);
    expect(firstHalf).toBeLessThan(260);
  });

  it("counts the wait for a free connection in the latency (open loop)", async () => {
    // One connection at ≥ 10 ms per answer serves at most 100 req/s; 150 req/s offered must queue (half a second
    // behind after the warm-up second alone), and the queue shows in the latency, not only the 10 ms.
    const { url } = await serve({ delayMs: 10 });
    const r = await pacedLoad({ url, rate: 150, durationSec: 1, connections: 1 });
    expect(r.p50).toBeGreaterThan(100);
    expect(r.p99).toBeGreaterThan(r.p50);
    expect(r.total).toBe(150);
  });

  it("reports answers outside 2xx apart from latencies", async () => {
    const { url } = await serve({ status: 503 });
    const r = await pacedLoad({ url, rate: 100, durationSec: 1, connections: 4 });
    expect(r.non2xx).toBe(100);
    expect(r.errors).toBe(0);
    expect(r.rps).toBe(0);
  });
});

describe("mergePaced", () => {
  const run = (latencies: number[], seconds: number, non2xx = 0): PacedResult => ({
    rps: latencies.length / seconds,
    p50: 0,
    p99: 0,
    errors: 0,
    non2xx,
    total: latencies.length + non2xx,
    seconds,
    latencies,
  });

  it("takes percentiles over every slice's requests, not the mean of the slices' percentiles", () => {
    // A fast slice and a slow one: the slow requests are 3 % of the whole, so the 99th percentile is slow.
    const fast = run(
      Array.from({ length: 97 }, () => 1),
      1,
    );
    const slow = run([50, 70, 60], 1, 3);
    const m = mergePaced([fast, slow]);
    expect(m.p50).toBe(1);
    expect(m.p99).toBe(70);
    expect(m.rps).toBe(50);
    expect(m.total).toBe(103);
    expect(m.non2xx).toBe(3);
    expect(m.seconds).toBe(2);
  });
});

describe.runIf(existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`))("schedTimes", () => {
  it("reads a thread's time on a CPU, which grows while it works, and all threads' together", () => {
    const before = schedTimes(process.pid);
    // Busy until this process has used 30 ms of CPU (not 30 ms of wall time: on a loaded machine the thread may
    // spend most of that waiting for a CPU), almost all of it on this thread.
    const cpu0 = process.cpuUsage();
    const giveUp = performance.now() + 10_000;
    for (;;) {
      const used = process.cpuUsage(cpu0);
      if (used.user + used.system >= 30_000 || performance.now() > giveUp) break;
    }
    const after = schedTimes(process.pid);
    expect(before && after).toBeTruthy();
    // Allow for other threads' share of the process's CPU and scheduler tick accounting.
    expect(after!.run - before!.run).toBeGreaterThan(15e6);
    expect(after!.wait).toBeGreaterThanOrEqual(before!.wait);
    const all = schedTimes(process.pid, true);
    expect(all!.run).toBeGreaterThanOrEqual(after!.run);
  });

  it("answers undefined for a process that does not exist", () => {
    expect(schedTimes(2 ** 22 + 1)).toBeUndefined();
    expect(schedTimes(2 ** 22 + 1, true)).toBeUndefined();
    expect(schedTimes(undefined)).toBeUndefined();
  });
});

describe("pgbench baseline", () => {
  /**
   * A pgbench stand-in: records each run and answers tps from `tpsByClients` a few event-loop turns later, and the
   * most runs it saw at once.
   */
  const fake = (tpsByClients: Record<number, number>) => {
    const runs: Parameters<PgbenchRun>[0][] = [];
    let running = 0;
    const seen = { mostAtOnce: 0 };
    const run: PgbenchRun = async (opts) => {
      runs.push(opts);
      seen.mostAtOnce = Math.max(seen.mostAtOnce, ++running);
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      running--;
      return tpsByClients[opts.clients] ?? 0;
    };
    return { run, runs, seen };
  };

  it("runs at a scale of at least the most clients, never below pgbench's rule of scale ≥ clients", () => {
    // Proves the scale follows the largest level (the old baseline ran scale 4 with up to 32 clients).
    expect(pgbenchPlan([1, 4, 16, 32])).toEqual({ scale: 32, levels: [1, 4, 16, 32] });
    expect(pgbenchPlan([64, 1, 16, 16, 4, 32])).toEqual({ scale: 64, levels: [1, 4, 16, 32, 64] });
    expect(pgbenchPlan([1])).toEqual({ scale: 1, levels: [1] });
    for (const bad of [[], [0], [-4], [2.5], [Number.NaN]]) expect(() => pgbenchPlan(bad), JSON.stringify(bad)).toThrow();
  });

  it("uses one thread per core, never more threads than clients", () => {
    // Proves -j never exceeds -c, which pgbench refuses.
    expect(pgbenchThreads(1, 2)).toBe(1);
    expect(pgbenchThreads(32, 2)).toBe(2);
    expect(pgbenchThreads(3, 8)).toBe(3);
  });

  it("runs every one of the benchmark's levels at that scale, one at a time, and keeps the best, whichever level it is", async () => {
    // Proves the baseline is pgbench's best over the same client levels, not one fixed level, and that no two
    // levels share the machine.
    const { run, runs, seen } = fake({ 1: 500, 4: 1800, 16: 2600, 32: 2400 });
    const b = await pgbenchBaseline(run, { levels: [32, 1, 16, 4], seconds: 10, cores: 2 });
    expect(runs).toEqual([
      { scale: 32, clients: 1, threads: 1, seconds: 10 },
      { scale: 32, clients: 4, threads: 2, seconds: 10 },
      { scale: 32, clients: 16, threads: 2, seconds: 10 },
      { scale: 32, clients: 32, threads: 2, seconds: 10 },
    ]);
    expect(seen.mostAtOnce).toBe(1);
    expect(b.best).toEqual({ clients: 16, threads: 2, tps: 2600 });
    expect(b.json()).toEqual({ scale: 32, seconds: 10, best_clients: 16, tps_by_clients: { "1": 500, "4": 1800, "16": 2600, "32": 2400 } });
  });

  it("measures a round again at the best level and the same scale", async () => {
    // Proves each round's baseline is the sweep's best level, measured afresh beside the round.
    const { run, runs } = fake({ 4: 900, 64: 3000 });
    const b = await pgbenchBaseline(run, { levels: [4, 64], seconds: 5, cores: 2 });
    runs.length = 0;
    expect(await b.again()).toEqual({ clients: 64, threads: 2, tps: 3000 });
    expect(runs).toEqual([{ scale: 64, clients: 64, threads: 2, seconds: 5 }]);
  });

  it("prefers fewer clients between equal levels and refuses an empty sweep", () => {
    expect(
      bestPgbenchLevel([
        { clients: 8, threads: 2, tps: 100 },
        { clients: 16, threads: 2, tps: 100 },
      ]).clients,
    ).toBe(8);
    expect(() => bestPgbenchLevel([])).toThrow(/no pgbench levels/);
  });
});
