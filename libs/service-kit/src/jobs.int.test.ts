// Proves the kit's job loop on real PostgreSQL: a leader job runs on one replica at a time and another takes over
// when the holder stops; a failing pass is logged and the next one still runs; passes never overlap.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb, type Sql } from "./db.ts";
import { Job } from "./jobs.ts";
import { captureLogger, createTestDatabase, waitFor, type TestDatabase } from "./test-support.ts";

const { log, lines } = captureLogger("jobs");
let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = createDb(db.url, { max: 4 });
});

afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

it("runs a leader job on one replica at a time and hands it over when the holder stops", async () => {
  const ran = { a: 0, b: 0 };
  let skippedB = 0;
  const a = new Job({ name: "check", intervalMs: 0, leader: true, run: async () => ++ran.a }, log, sql, "kit-test");
  const b = new Job({ name: "check", intervalMs: 0, leader: true, run: async () => ++ran.b, onNotLeader: () => skippedB++ }, log, sql, "kit-test");
  expect(await a.runOnce()).toBe(1);
  expect(await b.runOnce()).toBeUndefined();
  expect(await a.runOnce()).toBe(2);
  expect(skippedB).toBe(1);
  await a.stop();
  expect(await b.runOnce()).toBe(1);
  expect(await a.runOnce()).toBeUndefined();
  await b.stop();
  await a.stop();
});

it("logs a failing pass, runs the next on time, runs passes asked for at once one after the other, and ends the pass in progress on stop", async () => {
  let passes = 0;
  let inFlight = 0;
  let overlapped = false;
  const job = new Job(
    {
      name: "flaky",
      intervalMs: 5,
      run: async () => {
        inFlight++;
        overlapped ||= inFlight > 1;
        passes++;
        await new Promise((r) => setTimeout(r, 15));
        inFlight--;
        if (passes === 1 || passes === 3) throw new Error(`pass ${passes} fails`);
      },
    },
    log,
    sql,
    "kit-test",
  );
  job.start();
  const joined = await Promise.all([job.runOnce(), job.runOnce()].map((p) => p.catch(() => "failed")));
  await waitFor(() => passes >= 4, 10_000, "four passes");
  await job.stop();
  expect(inFlight).toBe(0);
  expect(overlapped).toBe(false);
  // Two passes asked for at once run one after the other: the first fails, the second runs after it.
  expect(joined).toEqual(["failed", undefined]);
  expect(lines.some((l) => l["msg"] === "flaky pass failed; it runs again at the next interval")).toBe(true);
});

it("aborts a long pass's signal on stop, so the pass ends between its units of work", async () => {
  let units = 0;
  let entered: () => void = () => {};
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const job = new Job(
    {
      name: "long",
      intervalMs: 0,
      run: async (_leader, signal) => {
        entered();
        while (!signal.aborted) {
          units++;
          await new Promise((r) => setImmediate(r));
        }
        return units;
      },
    },
    log,
    sql,
    "kit-test",
  );
  const pass = job.runOnce();
  await inside;
  await job.stop();
  expect(await pass).toBe(units);
  expect(units).toBeGreaterThan(0);
});
