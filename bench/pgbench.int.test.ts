/**
 * The benchmarks' pgbench runner on a real PostgreSQL: it measures tps, and the load generator's keep-alive
 * sockets stay usable across a run that outlasts the server's keep-alive timeout. When pgbench held the event
 * loop, the first closed loop after a sweep failed one flow per client with "other side closed".
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import postgres from "postgres";
import { Pool } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import { pgbenchRunner } from "./lib.ts";

/** The server's keep-alive timeout: the gateway's 72 s scaled down (hinted as timeout=3; undici keeps 1 s). */
const SERVER_KEEP_ALIVE_MS = 3000;

let env: TestEnv;
let server: Server;
let pool: Pool;
let database: string;
let opened = 0;

beforeAll(async () => {
  env = await setupTestEnv();
  database = `${env.database}_pgbench`;
  server = createServer((_req, res) => {
    // Held briefly, so that a burst opens several sockets.
    setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end("{}"), 20);
  });
  server.keepAliveTimeout = SERVER_KEEP_ALIVE_MS;
  server.on("connection", () => (opened += 1));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  // As the benchmarks make it (bench/checkout.bench.ts).
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 8, pipelining: 1 });
});

afterAll(async () => {
  await pool?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  if (database !== undefined) {
    const sql = postgres(env.adminUrl, { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${database}" with (force)`);
    await sql.end();
  }
  await env?.cleanup();
});

/** Eight POSTs at once through the pool; the failures' messages. */
async function burstFailures(): Promise<string[]> {
  const rs = await Promise.allSettled(
    Array.from({ length: 8 }, async () => {
      const r = await pool.request({ method: "POST", path: "/v1/checkout-sessions", headers: { "content-type": "application/json" }, body: "{}" });
      await r.body.dump();
      return r.statusCode;
    }),
  );
  return rs.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
}

describe("pgbenchRunner", () => {
  it("measures tps while the benchmark's keep-alive sockets stay usable, for a run longer than the server keeps them", async () => {
    expect(await burstFailures()).toEqual([]);
    expect(opened).toBeGreaterThan(1);
    const t0 = performance.now();
    const tps = await pgbenchRunner(env.adminUrl, database)({ scale: 1, clients: 1, threads: 1, seconds: 4 });
    // Without a run longer than the server's keep-alive timeout this test would prove nothing.
    expect(performance.now() - t0).toBeGreaterThan(SERVER_KEEP_ALIVE_MS + 500);
    expect(tps).toBeGreaterThan(0);
    expect(await burstFailures()).toEqual([]);
  });
});
