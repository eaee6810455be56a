// The relay's cost and batching on real PostgreSQL + JetStream: how many statements a commit's wake-up costs,
// that a burst goes out as one batch in order, that rows numbered before a crash go out before newer rows are
// numbered, and that a relay whose database session dies (under a statement, while idle, or between publish and
// mark) never crashes the process, takes the lock again and goes on publishing, each event once and in order.
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { eventsStreamName, newId } from "@treasury/contracts";
import type { EventEnvelope } from "@treasury/contracts";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDb, serviceDatabaseUrl, withTx } from "./db.ts";
import type { Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { connectNats, ensureEventsStream } from "./nats.ts";
import { OutboxRelay } from "./outbox.ts";
import { writeOutbox } from "./outbox-write.ts";
import type { OutboxRelayDeps, OutboxRelayOptions } from "./outbox.ts";
import type { EventPublisher } from "./outbox-publisher.ts";
import {
  captureLogger,
  createTestDatabase,
  deleteEventsStream,
  observedClock,
  publishThen,
  randomPrefix,
  TEST_NATS_URL,
  testEvent,
  unpublishedCount,
  waitFor,
} from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

const SCHEMA = "payments";
const prefix = randomPrefix();
const { log } = captureLogger(SCHEMA);
let db: TestDatabase;
let rootDir: string;
let sql: Sql;
let nc: NatsConnection;
const running: Array<{ stop(): Promise<void> }> = [];
const pools: Sql[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-outbox-relay-"));
  await mkdir(join(rootDir, "services", SCHEMA, "migrations"), { recursive: true });
  await migrateAll({ adminUrl: db.url, rootDir, services: [SCHEMA] });
  sql = createDb(serviceDatabaseUrl(db.url, SCHEMA), { max: 5 });
  nc = await connectNats({ url: TEST_NATS_URL, name: "outbox-relay-test" });
  await ensureEventsStream(nc, prefix);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
  // A connection that died under a statement never finishes a plain end() in postgres.js: bound it.
  await Promise.all(pools.splice(0).map((p) => p.end({ timeout: 1 })));
});

afterAll(async () => {
  if (nc) await deleteEventsStream(nc, prefix);
  await nc?.drain();
  await sql?.end();
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

/** A pool of the service's own, with every statement it sends recorded. */
function countingPool(): { pool: Sql; statements: string[] } {
  const statements: string[] = [];
  const pool = postgres(serviceDatabaseUrl(db.url, SCHEMA), {
    max: 3,
    onnotice: () => {},
    debug: (_conn, query) => void statements.push(query.replace(/\s+/g, " ").trim()),
  });
  pools.push(pool);
  return { pool, statements };
}

function relay(extra: Partial<OutboxRelayOptions> = {}, deps: OutboxRelayDeps = {}): OutboxRelay {
  const r = new OutboxRelay({ sql, nc, schema: SCHEMA, prefix, source: SCHEMA, log, pollIntervalMs: 50, ...extra }, deps);
  running.push(r);
  return r;
}

const event = testEvent;
const unpublished = (ids: string[]): Promise<number> => unpublishedCount(sql, ids);
/** A relay with no poll to speak of, whose clock tells when it is idle (waiting for that poll). */
const IDLE_POLL_MS = 60_000;

/** Publishes each batch for real and records its event ids. */
function recordBatches(): { batches: string[][]; publisher: EventPublisher } {
  const batches: string[][] = [];
  return { batches, publisher: publishThen(nc, log, (ids) => void batches.push(ids)) };
}

/** Waits until every id is published, failing at once on an uncaught error (the relay's session died under it). */
async function waitPublished(ids: string[], uncaught: { check(): void }): Promise<void> {
  await waitFor(
    async () => {
      uncaught.check();
      return (await unpublished(ids)) === 0;
    },
    5000,
    "published after the session died",
  );
}

/** The stream's messages of one org, in stream order. */
async function orgMessages(org: string): Promise<EventEnvelope[]> {
  const jsm = await jetstreamManager(nc);
  const name = eventsStreamName(prefix);
  const { state } = await jsm.streams.info(name);
  const out: EventEnvelope[] = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    const env = m?.json<EventEnvelope>();
    if (env?.org_id === org) out.push(env);
  }
  return out;
}

/** The backend pid of the session holding the relay's lock (the test database's only advisory lock). */
async function lockHolderPid(): Promise<number | undefined> {
  const [row] = await sql`select pid from pg_locks where locktype = 'advisory' and granted
    and database = (select oid from pg_database where datname = current_database())`;
  return row?.["pid"] as number | undefined;
}

/** Ends a backend and waits until it has exited (and so closed its connection). */
async function terminateBackend(pid: number | undefined): Promise<void> {
  const [killed] = await sql`select pg_terminate_backend(${pid ?? 0}::int) as ok`;
  expect(killed?.["ok"]).toBe(true);
  await waitFor(async () => (await sql`select 1 from pg_stat_activity where pid = ${pid ?? 0}`).length === 0, 3000, "the backend to exit");
}

/**
 * Records uncaught exceptions until the returned `stop`. postgres.js throws an uncatchable error when a reserved
 * connection writes after its socket closed (porsager/postgres#1208), which must never reach the process: vitest
 * fails the run on one, `check` fails the test at once.
 */
function recordUncaught(): { errors: unknown[]; check(): void; stop(): void } {
  const errors: unknown[] = [];
  const listener = (err: unknown): void => void errors.push(err);
  process.on("uncaughtException", listener);
  return {
    errors,
    check: () => {
      if (errors.length > 0) throw errors[0];
    },
    stop: () => void process.off("uncaughtException", listener),
  };
}

describe("outbox relay round trips and batching", () => {
  it("publishes a commit's event with a handful of statements per wake-up, and nothing while idle", async () => {
    const { pool, statements } = countingPool();
    const time = observedClock();
    const r = relay({ sql: pool, pollIntervalMs: IDLE_POLL_MS, lockCheckIntervalMs: 60_000 }, { clock: time.clock });
    await r.start();
    /** Commits one event, then waits until it is published and the relay idle again (any trailing cycle over). */
    const publishOne = async (n: number): Promise<void> => {
      const idle = time.waitsOf(IDLE_POLL_MS);
      const id = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event("org_rt", { n })));
      await waitFor(async () => (await unpublished([id])) === 0, 3000, `event ${n} published`);
      await waitFor(() => time.waitsOf(IDLE_POLL_MS) > idle, 3000, `the relay idle after event ${n}`);
    };
    // Warm up: the first use of each statement on the connection also prepares it.
    await publishOne(0);

    const wakes = 5;
    statements.length = 0;
    for (let i = 1; i <= wakes; i++) await publishOne(i);
    // numbering + BEGIN + SELECT, then UPDATE + COMMIT (two round trips); the old relay sent ~17 statements
    // per wake-up (two empty passes, BEGIN/COMMIT around each statement, a lock check every loop).
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(wakes * 5);
    expect(statements.filter((s) => s.includes("pg_locks"))).toEqual([]);
    expect((await orgMessages("org_rt")).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("publishes a burst of events committed together as one batch, in order", async () => {
    const { batches, publisher } = recordBatches();
    const time = observedClock();
    await relay({ pollIntervalMs: IDLE_POLL_MS }, { publisher, clock: time.clock }).start();
    await waitFor(() => time.waitsOf(IDLE_POLL_MS) > 0, 3000, "the relay to go idle");
    const org = `org_${newId("evt")}`;
    const ids = await withTx(sql, async (tx) => {
      const out: string[] = [];
      for (let i = 0; i < 40; i++) out.push(await writeOutbox(tx, SCHEMA, event(org, { i })));
      return out;
    });
    await waitFor(async () => (await unpublished(ids)) === 0, 3000, "burst published");
    expect(batches).toEqual([ids]);
    const msgs = await orgMessages(org);
    expect(msgs.map((e) => e.id)).toEqual(ids);
    expect(msgs.map((e) => e.sequence)).toEqual(ids.map((_, i) => i + 1));
  });

  it("with coalesceMs, commits arriving together go out in one batch", async () => {
    const { batches, publisher } = recordBatches();
    const time = observedClock();
    // A window wide enough for a slow, shared CI machine: the five commits below must land inside it.
    await relay({ pollIntervalMs: IDLE_POLL_MS, coalesceMs: 500 }, { publisher, clock: time.clock }).start();
    await waitFor(() => time.waitsOf(IDLE_POLL_MS) > 0, 3000, "the relay to go idle");
    // Five pool connections open before the commits (all five reserved at once), so that no commit waits for a
    // connection to be made.
    for (const c of await Promise.all(Array.from({ length: 5 }, () => sql.reserve()))) c.release();
    const org = `org_${newId("evt")}`;
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org, { i })))));
    await waitFor(async () => (await unpublished(ids)) === 0, 3000, "commits published");
    expect(batches).toHaveLength(1);
    expect([...(batches[0] ?? [])].sort()).toEqual([...ids].sort());
    const msgs = await orgMessages(org);
    expect(msgs.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  it("publishes rows numbered before a crash before it numbers newer rows", async () => {
    const org = `org_${newId("evt")}`;
    const first = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org, { n: 1 })));
    let crashes = 0;
    const crashing = relay(
      {},
      {
        publisher: publishThen(nc, log, () => {
          crashes += 1;
          throw new Error("simulated crash after publish");
        }),
      },
    );
    await crashing.start();
    await waitFor(() => crashes > 0, 3000, "first publish");
    await crashing.stop();
    const [row] = await sql`select payload->'sequence' as sequence, attempts from payments.outbox where id = ${first}`;
    expect(Number(row?.["sequence"])).toBe(1);
    expect(Number(row?.["attempts"])).toBeGreaterThanOrEqual(1);

    const later = await withTx(sql, async (tx) => [await writeOutbox(tx, SCHEMA, event(org, { n: 2 })), await writeOutbox(tx, SCHEMA, event(org, { n: 3 }))]);
    const { batches, publisher } = recordBatches();
    await relay({}, { publisher }).start();
    await waitFor(async () => (await unpublished([first, ...later])) === 0, 3000, "all published");
    expect(batches.filter((b) => b.some((id) => id === first || later.includes(id)))).toEqual([[first], later]);
    const msgs = await orgMessages(org);
    expect(msgs.map((e) => [e.id, e.sequence])).toEqual([
      [first, 1],
      [later[0], 2],
      [later[1], 3],
    ]);
  });

  it("gives up the lock when its session dies under a statement, takes it again with a new one and goes on publishing", async () => {
    const org = `org_${newId("evt")}`;
    const r = relay({ sql: countingPool().pool, pollIntervalMs: 50 });
    await r.start();
    expect(r.isLeader()).toBe(true);
    const before = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org)));
    await waitFor(async () => (await unpublished([before])) === 0, 3000, "published before");

    // Hold the org's sequence row, so the relay's numbering statement waits on it, then end the relay's session.
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let holding!: () => void;
    const isHeld = new Promise<void>((resolve) => (holding = resolve));
    const holder = sql.begin(async (tx) => {
      await tx`select 1 from payments.event_seq where org_id = ${org} and livemode = false for update`;
      holding();
      await held;
    });
    await isHeld;
    const after = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org)));
    const pid = await lockHolderPid();
    await waitFor(
      async () => {
        const [row] = await sql`select wait_event_type from pg_stat_activity where pid = ${pid ?? 0}`;
        return row?.["wait_event_type"] === "Lock";
      },
      3000,
      "the relay's numbering to wait",
    );
    const [killed] = await sql`select pg_terminate_backend(${pid ?? 0}::int) as ok`;
    expect(killed?.["ok"]).toBe(true);

    // It takes the lock again on a new session; its numbering waits again until the row is let go.
    await waitFor(async () => r.isLeader() && (await lockHolderPid()) !== undefined && (await lockHolderPid()) !== pid, 5000, "lock taken again");
    letGo();
    await holder;
    await waitFor(async () => (await unpublished([after])) === 0, 5000, "published after the session died");
    expect(r.isLeader()).toBe(true);
    const msgs = await orgMessages(org);
    expect(msgs.map((e) => [e.id, e.sequence])).toEqual([
      [before, 1],
      [after, 2],
    ]);
  });

  it("survives its session dying while idle: takes the lock again and publishes what follows once, in order", async () => {
    const uncaught = recordUncaught();
    try {
      const org = `org_${newId("evt")}`;
      // Each published event, with the session that held the lock when its batch went out.
      const published: Array<[string, number | undefined]> = [];
      const lockCheckIntervalMs = 200;
      const time = observedClock();
      // No polls: between commits the relay sends nothing, so its session dies with no statement under way.
      const r = relay(
        { sql: countingPool().pool, pollIntervalMs: IDLE_POLL_MS, lockCheckIntervalMs },
        {
          clock: time.clock,
          publisher: publishThen(nc, log, async (ids) => {
            const holder = await lockHolderPid();
            published.push(...ids.map((id): [string, number | undefined] => [id, holder]));
          }),
        },
      );
      await r.start();
      expect(r.isLeader()).toBe(true);
      const before = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org)));
      await waitFor(async () => (await unpublished([before])) === 0, 3000, "published before");
      const pid = await lockHolderPid();
      expect(pid).toBeDefined();

      time.advance(lockCheckIntervalMs);
      await terminateBackend(pid);
      // The client reports the closed connection; the relay takes the lock again on a new session.
      await waitFor(async () => r.isLeader() && ![undefined, pid].includes(await lockHolderPid()), 5000, "lock taken again");
      // Past the lock check interval, so the next wake-up checks the lock before anything else.
      time.advance(lockCheckIntervalMs * 2);

      const ids = await withTx(sql, async (tx) => [await writeOutbox(tx, SCHEMA, event(org, { n: 1 })), await writeOutbox(tx, SCHEMA, event(org, { n: 2 }))]);
      ids.push(await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(org, { n: 3 }))));
      await waitPublished(ids, uncaught);
      const newPid = await lockHolderPid();
      expect(newPid).toBeDefined();
      expect(newPid).not.toBe(pid);
      expect(r.isLeader()).toBe(true);
      expect(published).toEqual([[before, pid], ...ids.map((id) => [id, newPid])]);
      const msgs = await orgMessages(org);
      expect(msgs.map((e) => [e.id, e.sequence])).toEqual([before, ...ids].map((id, i) => [id, i + 1]));
      expect(uncaught.errors).toEqual([]);
    } finally {
      uncaught.stop();
    }
  });

  it("marks nothing on a new session when its session dies between publish and mark; publishes again once it holds the lock", async () => {
    const uncaught = recordUncaught();
    try {
      const org = `org_${newId("evt")}`;
      const batches: Array<{ ids: string[]; holder: number | undefined }> = [];
      const r = relay(
        { sql: countingPool().pool, pollIntervalMs: 50 },
        {
          publisher: publishThen(nc, log, async (ids) => {
            const holder = await lockHolderPid();
            batches.push({ ids, holder });
            // The first batch is out: end the session before the relay marks it, and let the client see it closed.
            if (batches.length === 1) {
              await terminateBackend(holder);
              await waitFor(() => !r.isLeader(), 3000, "the relay to see its session closed");
            }
          }),
        },
      );
      await r.start();
      const ids = await withTx(sql, async (tx) => [await writeOutbox(tx, SCHEMA, event(org, { n: 1 })), await writeOutbox(tx, SCHEMA, event(org, { n: 2 }))]);
      await waitPublished(ids, uncaught);
      // Not marked by the statements that ran on the new session without the lock: published again once the
      // relay held the lock there, and marked then.
      expect(batches.map((b) => b.ids)).toEqual([ids, ids]);
      const [first, second] = batches;
      expect(first?.holder).toBeDefined();
      expect(second?.holder).toBeDefined();
      expect(second?.holder).not.toBe(first?.holder);
      expect(second?.holder).toBe(await lockHolderPid());
      const msgs = await orgMessages(org);
      expect(msgs.map((e) => [e.id, e.sequence])).toEqual(ids.map((id, i) => [id, i + 1]));
      expect(uncaught.errors).toEqual([]);
    } finally {
      uncaught.stop();
    }
  });
});
