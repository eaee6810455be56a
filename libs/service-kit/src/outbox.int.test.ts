// Proves the outbox path end to end on real PostgreSQL + JetStream: only committed events are published, in
// order, with Nats-Msg-Id = event id and per-org sequences; a relay killed between publish and mark republishes
// the same id and consumers still process it once; the inbox de-duplicates beyond the broker's window.
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { eventsStreamName, eventSubject, NATS_HEADERS, newId } from "@treasury/contracts";
import type { EventEnvelope } from "@treasury/contracts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EventConsumer } from "./consumer.ts";
import { createDb, serviceDatabaseUrl, withTx } from "./db.ts";
import type { Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { connectNats, ensureEventsStream } from "./nats.ts";
import { OutboxRelay } from "./outbox.ts";
import { writeOutbox } from "./outbox-write.ts";
import { tracer } from "./telemetry.ts";
import type { OutboxRelayDeps, OutboxRelayOptions } from "./outbox.ts";
import {
  captureLogger,
  installTestTracing,
  createTestDatabase,
  deleteEventsStream,
  observedClock,
  publishThen,
  randomPrefix,
  sleep,
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

beforeAll(async () => {
  installTestTracing();
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-outbox-"));
  await mkdir(join(rootDir, "services", SCHEMA, "migrations"), { recursive: true });
  await writeFile(
    join(rootDir, "services", SCHEMA, "migrations", "0001_handled.sql"),
    "create table handled (id bigserial primary key, consumer text not null, event_id text not null);",
  );
  await migrateAll({ adminUrl: db.url, rootDir, services: [SCHEMA] });
  // The service's own role: the relay and consumers must work with exactly the privileges a service has.
  sql = createDb(serviceDatabaseUrl(db.url, SCHEMA), { max: 5 });
  nc = await connectNats({ url: TEST_NATS_URL, name: "outbox-test" });
  await ensureEventsStream(nc, prefix);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

afterAll(async () => {
  if (nc) await deleteEventsStream(nc, prefix);
  await nc?.drain();
  await sql?.end();
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

function relay(extra: Partial<OutboxRelayOptions> = {}, deps: OutboxRelayDeps = {}): OutboxRelay {
  const r = new OutboxRelay({ sql, nc, schema: SCHEMA, prefix, source: SCHEMA, log, pollIntervalMs: 50, ...extra }, deps);
  running.push(r);
  return r;
}

function consumer(durable: string, onEvent: (evt: EventEnvelope) => Promise<void> | void = () => {}, extra: { ackWaitMs?: number } = {}): EventConsumer {
  const c = new EventConsumer({
    nc,
    sql,
    schema: SCHEMA,
    prefix,
    durable,
    log,
    ...extra,
    filterSubject: `${prefix}evt.>`,
    handler: async (evt, tx) => {
      await onEvent(evt);
      await tx`insert into payments.handled (consumer, event_id) values (${durable}, ${evt.id})`;
    },
  });
  running.push(c);
  return c;
}

const event = testEvent;
const unpublished = (ids: string[]): Promise<number> => unpublishedCount(sql, ids);

/** Every stored stream message, in stream order. */
async function streamMessages(): Promise<Array<{ msgId: string; subject: string; env: EventEnvelope; traceparent: string }>> {
  const jsm = await jetstreamManager(nc);
  const name = eventsStreamName(prefix);
  const { state } = await jsm.streams.info(name);
  const out = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    if (!m) continue;
    out.push({ msgId: m.header.get(NATS_HEADERS.msgId), subject: m.subject, env: m.json<EventEnvelope>(), traceparent: m.header.get("traceparent") });
  }
  return out;
}

async function handledCount(durable: string, eventId: string): Promise<number> {
  const [row] = await sql`select count(*)::int as n from payments.handled where consumer = ${durable} and event_id = ${eventId}`;
  return Number(row?.["n"]);
}

describe("outbox relay", () => {
  it("publishes committed events in order with Nats-Msg-Id and per-org sequences; a rollback publishes nothing", async () => {
    const [orgA, orgB] = [`org_${newId("evt")}`, `org_${newId("evt")}`];
    // Written inside a request's span: the published messages must continue that trace.
    const { ids, traceId } = await tracer().startActiveSpan("request", async (span) => {
      const written = await withTx(sql, async (tx) => [
        await writeOutbox(tx, SCHEMA, event(orgA, { n: 1 })),
        await writeOutbox(tx, SCHEMA, event(orgB, { n: 1 })),
        await writeOutbox(tx, SCHEMA, event(orgA, { n: 2 })),
      ]);
      span.end();
      return { ids: written, traceId: span.spanContext().traceId };
    });
    ids.push(await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event(orgA, { n: 3 }))));
    const rolledBack = newId("evt");
    await expect(
      withTx(sql, async (tx) => {
        await writeOutbox(tx, SCHEMA, { ...event(orgA, { n: 99 }), id: rolledBack });
        throw new Error("business rule failed");
      }),
    ).rejects.toThrow("business rule failed");

    await relay().start();
    await waitFor(async () => (await unpublished(ids)) === 0, 5000, "events published");

    const mine = (await streamMessages()).filter((m) => m.env.org_id === orgA || m.env.org_id === orgB);
    expect(mine.map((m) => m.msgId)).toEqual(ids);
    expect(mine.map((m) => m.env.id)).toEqual(ids);
    expect(mine.map((m) => [m.env.org_id, m.env.sequence, m.env.data["n"]])).toEqual([
      [orgA, 1, 1],
      [orgB, 1, 1],
      [orgA, 2, 2],
      [orgA, 3, 3],
    ]);
    expect(mine.every((m) => m.subject === eventSubject(prefix, "sandbox.test") && m.env.source === SCHEMA)).toBe(true);
    expect(mine.slice(0, 3).map((m) => m.traceparent.split("-")[1])).toEqual([traceId, traceId, traceId]);
    const [rb] = await sql`select count(*)::int as n from payments.outbox where id = ${rolledBack}`;
    expect(rb?.["n"]).toBe(0);
  });

  it("is woken right after a withTx COMMIT rather than waiting for the poll, and not by a rollback", async () => {
    const time = observedClock();
    await relay({ pollIntervalMs: 60_000 }, { clock: time.clock }).start();
    // The first (empty) cycle is over once the relay waits for its poll: only the commit signal can start the next.
    await waitFor(() => time.waitsOf(60_000) > 0, 3000, "the relay to go idle");
    const id = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event("org_notify")));
    await waitFor(async () => (await unpublished([id])) === 0, 3000, "commit-driven publish");
  });

  it("finds rows committed outside withTx (or by another replica) with its poll", async () => {
    const time = observedClock();
    await relay({ pollIntervalMs: 100 }, { clock: time.clock }).start();
    // Written once the relay waits for its poll, so that no cycle already under way can find it.
    await waitFor(() => time.waitsOf(100) > 0, 3000, "the relay to go idle");
    const id = await sql.begin((tx) => writeOutbox(tx, SCHEMA, event("org_poll")));
    await waitFor(async () => (await unpublished([id])) === 0, 3000, "poll-driven publish");
  });

  it("runs one relay at a time and fails over when the leader stops", async () => {
    const a = relay();
    const b = relay();
    await a.start();
    await b.start();
    expect([a.isLeader(), b.isLeader()].sort()).toEqual([false, true]);
    const [leader, standby] = a.isLeader() ? [a, b] : [b, a];
    await leader.stop();
    await waitFor(() => standby.isLeader(), 3000, "standby to take the lock");
    const id = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event("org_failover")));
    await waitFor(async () => (await unpublished([id])) === 0, 3000, "standby publishes");
  });

  it("republishes the same id after a crash between publish and mark; the consumer handles it once", async () => {
    const id = await withTx(sql, (tx) => writeOutbox(tx, SCHEMA, event("org_crash")));
    const crashed: string[][] = [];
    const first = relay(
      {},
      {
        publisher: publishThen(nc, log, (ids) => {
          crashed.push(ids);
          throw new Error("simulated crash after publish");
        }),
      },
    );
    await first.start();
    await waitFor(() => crashed.some((ids) => ids.includes(id)), 3000, "first publish");
    await first.stop();
    expect(await unpublished([id])).toBe(1);
    const [row] = await sql`select attempts, payload->'sequence' as sequence from payments.outbox where id = ${id}`;
    expect(Number(row?.["attempts"])).toBeGreaterThanOrEqual(1);
    const sequence = Number(row?.["sequence"]);

    const republished: string[] = [];
    await relay({}, { publisher: publishThen(nc, log, (ids) => void republished.push(...ids)) }).start();
    await waitFor(async () => (await unpublished([id])) === 0, 3000, "second relay marks it");
    expect(republished).toContain(id);

    // JetStream kept one copy, with the sequence assigned before the crash.
    const copies = (await streamMessages()).filter((m) => m.msgId === id);
    expect(copies.map((m) => m.env.sequence)).toEqual([sequence]);

    const seen: string[] = [];
    const c = consumer("crash_once", (evt) => void seen.push(evt.id));
    await c.start();
    await waitFor(async () => (await handledCount("crash_once", id)) === 1, 5000, "consumer handles the event");
    // Everything delivered is acknowledged, so nothing can be delivered again.
    await waitFor(async () => (await c.pending()) === 0, 5000, "every delivery acknowledged");
    expect(seen.filter((s) => s === id)).toEqual([id]);
  });
});

function testEnvelope(id: string): EventEnvelope {
  return { id, type: "sandbox.test", org_id: "org_consumer", livemode: false, created_at: new Date().toISOString(), sequence: 1, source: "test", data: {} };
}

describe("event consumer", () => {
  it("processes a redelivery beyond the broker's de-duplication window once (inbox)", async () => {
    const js = jetstream(nc);
    const env: EventEnvelope = {
      id: newId("evt"),
      type: "sandbox.test",
      org_id: "org_dup",
      livemode: false,
      created_at: new Date().toISOString(),
      sequence: 1,
      source: "test",
      data: {},
    };
    // No Nats-Msg-Id: the broker stores both copies, as it would once the window has passed.
    await js.publish(eventSubject(prefix, "sandbox.test"), JSON.stringify(env));
    await js.publish(eventSubject(prefix, "sandbox.test"), JSON.stringify(env));
    expect((await streamMessages()).filter((m) => m.env.id === env.id)).toHaveLength(2);

    let calls = 0;
    const c = consumer("dup_once", (evt) => void (evt.id === env.id && calls++));
    await c.start();
    await waitFor(async () => (await c.pending()) === 0, 5000, "both copies acknowledged");
    expect(calls).toBe(1);
    expect(await handledCount("dup_once", env.id)).toBe(1);
  });

  it("rolls back a failed handler, naks, and succeeds on redelivery", async () => {
    const id = newId("evt");
    const env: EventEnvelope = {
      id,
      type: "sandbox.test",
      org_id: "org_retry",
      livemode: false,
      created_at: new Date().toISOString(),
      sequence: 1,
      source: "test",
      data: {},
    };
    let attempts = 0;
    const c = consumer("retry_once", async (evt) => {
      if (evt.id !== id) return;
      attempts += 1;
      if (attempts === 1) throw new Error("transient failure");
    });
    await c.start();
    await jetstream(nc).publish(eventSubject(prefix, "sandbox.test"), JSON.stringify(env), { msgID: id });
    await waitFor(async () => (await handledCount("retry_once", id)) === 1, 8000, "redelivered event handled");
    expect(attempts).toBe(2);
    const [inbox] = await sql`select count(*)::int as n from payments.inbox where consumer = 'retry_once' and event_id = ${id}`;
    expect(inbox?.["n"]).toBe(1);
  });

  it("does not get an event again while a handler slower than the ack wait still works on it", async () => {
    const id = newId("evt");
    let calls = 0;
    const c = consumer(
      "slow_once",
      async (evt) => {
        if (evt.id !== id) return;
        calls += 1;
        // Slower than three ack waits in real time: the broker's timer is what is under test.
        await sleep(1_500);
      },
      { ackWaitMs: 500 },
    );
    await c.start();
    await waitFor(async () => (await c.pending()) === 0, 5000, "earlier events handled");
    const info = async () => (await jetstream(nc).consumers.get(eventsStreamName(prefix), "slow_once")).info();
    const deliveriesBefore = (await info()).delivered.consumer_seq;
    await jetstream(nc).publish(eventSubject(prefix, "sandbox.test"), JSON.stringify(testEnvelope(id)), { msgID: id });
    await waitFor(async () => (await handledCount("slow_once", id)) === 1, 8000, "slow event handled");
    // Once it is acknowledged, the broker can deliver it no more: the count below is final.
    await waitFor(async () => (await c.pending()) === 0, 5000, "the event acknowledged");
    expect(calls).toBe(1);
    // Delivered once: three ack waits passed while the handler ran.
    expect((await info()).delivered.consumer_seq - deliveriesBefore).toBe(1);
  });

  it("delivers an event pulled by a process that died again after the ack wait", async () => {
    const durable = "dead_puller";
    // The durable exists with a 1 s ack wait and has handled what the stream held before.
    const first = consumer(durable, () => {}, { ackWaitMs: 1_000 });
    await first.start();
    await waitFor(async () => (await first.pending()) === 0, 5000, "earlier events handled");
    await first.stop();
    const id = newId("evt");
    await jetstream(nc).publish(eventSubject(prefix, "sandbox.test"), JSON.stringify(testEnvelope(id)), { msgID: id });
    // A process pulls it and dies before acknowledging (nothing acks or reports progress).
    const raw = await jetstream(nc).consumers.get(eventsStreamName(prefix), durable);
    const pulled = await raw.next({ expires: 5_000 });
    expect(pulled?.json<EventEnvelope>().id).toBe(id);
    const diedAt = Date.now();
    await consumer(durable, () => {}, { ackWaitMs: 1_000 }).start();
    await waitFor(async () => (await handledCount(durable, id)) === 1, 6_000, "event handled after the ack wait");
    expect(Date.now() - diedAt).toBeGreaterThanOrEqual(800);
  });
});
