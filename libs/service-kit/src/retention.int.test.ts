// Proves the retention sweep on real PostgreSQL: only published outbox rows and inbox claims older than their
// period go, unpublished rows stay however old, batches repeat until nothing is left, 0 keeps rows forever.
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb, serviceDatabaseUrl } from "./db.ts";
import type { Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { kitPurgeTasks, PURGE_BATCH, RetentionSweeper } from "./retention.ts";
import { captureLogger, createTestDatabase } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

const SCHEMA = "payments";
const { log } = captureLogger(SCHEMA);
let db: TestDatabase;
let rootDir: string;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-retention-"));
  await mkdir(join(rootDir, "services", SCHEMA, "migrations"), { recursive: true });
  await migrateAll({ adminUrl: db.url, rootDir, services: [SCHEMA] });
  // The service's own role: the sweep must work with exactly the privileges a service has.
  sql = createDb(serviceDatabaseUrl(db.url, SCHEMA), { max: 3 });
});

afterAll(async () => {
  await sql?.end();
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

async function outboxRow(id: string, createdDaysAgo: number, publishedDaysAgo: number | null): Promise<void> {
  await sql`
    insert into payments.outbox (id, org_id, livemode, type, subject, payload, created_at, published_at)
    values (${id}, 'org_r', false, 'sandbox.test', 'evt.sandbox.test', '{}', now() - make_interval(days => ${createdDaysAgo}),
            ${publishedDaysAgo === null ? null : sql`now() - make_interval(days => ${publishedDaysAgo})`})`;
}

it("deletes published outbox rows and inbox claims past their retention, nothing else", async () => {
  await outboxRow("evt_published_old", 20, 20);
  await outboxRow("evt_published_recent", 20, 2);
  await outboxRow("evt_unpublished_old", 40, null);
  await sql`insert into payments.inbox (consumer, event_id, processed_at) values
    ('c1', 'evt_a', now() - interval '20 days'), ('c1', 'evt_b', now() - interval '13 days'), ('c2', 'evt_a', now())`;

  const sweeper = new RetentionSweeper(log);
  for (const t of kitPurgeTasks(sql, SCHEMA, { outbox: 14, inbox: 14 })) sweeper.add(t);
  expect(await sweeper.sweep()).toEqual({ "payments.outbox": 1, "payments.inbox": 1 });
  const outbox = await sql<{ id: string }[]>`select id from payments.outbox order by id`;
  expect(outbox.map((r) => r.id)).toEqual(["evt_published_recent", "evt_unpublished_old"]);
  const inbox = await sql<{ consumer: string; event_id: string }[]>`select consumer, event_id from payments.inbox order by consumer, event_id`;
  expect(inbox).toEqual([
    { consumer: "c1", event_id: "evt_b" },
    { consumer: "c2", event_id: "evt_a" },
  ]);
  expect(await sweeper.sweep()).toEqual({ "payments.outbox": 0, "payments.inbox": 0 });
});

it("repeats batches until no old row is left; 0 days keeps everything", async () => {
  await sql`
    insert into payments.inbox (consumer, event_id, processed_at)
    select 'bulk', 'evt_' || g, now() - interval '30 days' from generate_series(1, ${PURGE_BATCH * 2 + 7}) g`;
  const keep = new RetentionSweeper(log);
  for (const t of kitPurgeTasks(sql, SCHEMA, { outbox: 0, inbox: 0 })) keep.add(t);
  expect(await keep.sweep()).toEqual({});
  const sweeper = new RetentionSweeper(log);
  for (const t of kitPurgeTasks(sql, SCHEMA, { outbox: 14, inbox: 14 })) sweeper.add(t);
  // Two sweeps started together are one sweep.
  const [a, b] = await Promise.all([sweeper.sweep(), sweeper.sweep()]);
  expect(a).toBe(b);
  expect(a["payments.inbox"]).toBe(PURGE_BATCH * 2 + 7);
  const [left] = await sql<{ n: number }[]>`select count(*)::int as n from payments.inbox where consumer = 'bulk'`;
  expect(left?.n).toBe(0);
});

it("stop() ends a sweep after its current batch", async () => {
  await sql`
    insert into payments.inbox (consumer, event_id, processed_at)
    select 'stopping', 'evt_' || g, now() - interval '30 days' from generate_series(1, ${PURGE_BATCH * 3}) g`;
  const sweeper = new RetentionSweeper(log);
  let batches = 0;
  sweeper.add({
    name: "payments.inbox",
    days: 14,
    purge: async (before, limit) => {
      batches += 1;
      if (batches === 1) void sweeper.stop();
      const [task] = kitPurgeTasks(sql, SCHEMA, { outbox: 0, inbox: 14 }).filter((t) => t.name === "payments.inbox");
      return task === undefined ? 0 : task.purge(before, limit);
    },
  });
  expect(await sweeper.sweep()).toEqual({ "payments.inbox": PURGE_BATCH });
  expect(batches).toBe(1);
  await sql`delete from payments.inbox where consumer = 'stopping'`;
});
