// Proves the kit's sandbox clock on real PostgreSQL: live runs on real time, a sandbox on real time plus its org's
// advance; an advance never moves a clock back (a late, smaller one changes nothing); every replica notices an
// advance written by any other within its refresh and tells its listeners once per move.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { advanceSandboxClock, SandboxClock } from "./clock.ts";
import { createDb, type Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { captureLogger, createTestDatabase, waitFor, type TestDatabase } from "./test-support.ts";

const SCHEMA = "kit_clock";
const { log } = captureLogger("clock");
let db: TestDatabase;
let sql: Sql;
const clocks: SandboxClock[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await migrateAll({ adminUrl: db.url, rootDir: await mkdtemp(join(tmpdir(), "kit-clock-")), services: [SCHEMA] });
  sql = createDb(db.url, { max: 4 });
});

afterAll(async () => {
  for (const c of clocks) c.stop();
  await sql?.end();
  await db?.drop();
});

const REAL = new Date("2026-03-02T10:00:00Z");

function replica(): SandboxClock {
  const c = new SandboxClock(sql, SCHEMA, log, () => REAL);
  clocks.push(c);
  return c;
}

it("runs live on real time and each sandbox on its org's advance, forward only", async () => {
  const clock = replica();
  await clock.start();
  expect(clock.now({ orgId: "org_a", livemode: false })).toEqual(REAL);
  expect(await advanceSandboxClock(sql, SCHEMA, "org_a", 86_400)).toBe(86_400);
  // An older event arriving late leaves the clock where it is.
  expect(await advanceSandboxClock(sql, SCHEMA, "org_a", 3_600)).toBe(86_400);
  await clock.refresh();
  expect(clock.now({ orgId: "org_a", livemode: false })).toEqual(new Date("2026-03-03T10:00:00Z"));
  expect(clock.now({ orgId: "org_a", livemode: true })).toEqual(REAL);
  expect(clock.now({ orgId: "org_b", livemode: false })).toEqual(REAL);
  expect([...clock.advanced()]).toEqual([["org_a", 86_400]]);
});

it("wakes every replica's listeners once per move, whoever wrote it", async () => {
  const a = replica();
  const b = replica();
  const seen: string[] = [];
  a.onAdvance((org) => seen.push(`a:${org}`));
  b.onAdvance((org) => seen.push(`b:${org}`));
  await a.start();
  await b.start();
  await advanceSandboxClock(sql, SCHEMA, "org_c", 60);
  await waitFor(() => seen.length === 2, 5_000, "both replicas told");
  expect(seen.sort()).toEqual(["a:org_c", "b:org_c"]);
  await a.refresh();
  expect(seen).toHaveLength(2);
  expect(b.advancedSeconds("org_c")).toBe(60);
});
