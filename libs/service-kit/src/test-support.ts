/**
 * Shared setup for this package's integration tests: a fresh database and subject prefix per test file on
 * the real PostgreSQL and NATS the harness points at. Not exported from the package.
 */
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { eventsStreamName } from "@treasury/contracts";
import postgres from "postgres";
import type { Logger } from "pino";
import { createLogger } from "./logger.ts";
import type { RelayClock } from "./outbox-session.ts";
import type { NewEvent } from "./outbox-write.ts";
import { jetStreamPublisher } from "./outbox-publisher.ts";
import type { EventPublisher } from "./outbox-publisher.ts";

/**
 * What a test harness does for tracing: its own global provider recording into an in-memory exporter, and an
 * async-local context manager. initTelemetry must keep both (it does not install its own over them).
 */
export function installTestTracing(): InMemorySpanExporter {
  const spans = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return spans;
}

export const TEST_DATABASE_URL = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const TEST_NATS_URL = process.env["TEST_NATS_URL"] ?? "nats://127.0.0.1:4222";

function randomToken(): string {
  return randomBytes(5).toString("hex");
}

/** A subject prefix no other test file uses, e.g. `t1a2b3c4d5.`. */
export function randomPrefix(): string {
  return `t${randomToken()}.`;
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `kit_${randomToken()}`;
  const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const a = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await a.end();
      }
    },
  };
}

/** Removes the prefix's EVENTS stream (and with it its consumers). */
export async function deleteEventsStream(nc: NatsConnection, prefix: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(eventsStreamName(prefix)).catch(() => false);
}

/** A logger whose lines the test can read back as parsed JSON. */
export function captureLogger(service = "test"): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ service, level: "debug", destination }), lines };
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5000, what = "condition"): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A promise the test settles itself: a handler held until the test lets it go. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * An outbox relay's clock on real timers, which records every wait the relay starts and whose time a test can
 * move forward. A relay starts a wait of its poll interval only when it has nothing left to do: counting those
 * tells a test that the relay is idle.
 */
export function observedClock(): { clock: RelayClock; waitsOf(ms: number): number; advance(ms: number): void } {
  let offset = 0;
  const waits: number[] = [];
  return {
    clock: {
      now: () => Date.now() + offset,
      after: (ms, fn) => {
        waits.push(ms);
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
      },
    },
    waitsOf: (ms) => waits.filter((w) => w === ms).length,
    advance: (ms) => void (offset += ms),
  };
}

/**
 * The relay's own JetStream publisher, followed by `after` with each batch's event ids once the broker has
 * stored the batch and before the relay marks it published: a throw there is a crash between the two.
 */
export function publishThen(nc: NatsConnection, log: Logger, after: (ids: string[]) => Promise<void> | void): EventPublisher {
  const real = jetStreamPublisher(nc, log);
  return {
    publish: async (batch) => {
      await real.publish(batch);
      await after(batch.map((m) => m.envelope.id));
    },
  };
}

/** A test event of org `org` (outbox tests). */
export function testEvent(org: string, data: Record<string, unknown> = {}): NewEvent {
  return { type: "sandbox.test", org_id: org, livemode: false, data };
}

/** How many of these outbox rows (in the `payments` test schema) are still unpublished. */
export async function unpublishedCount(sql: postgres.Sql, ids: string[]): Promise<number> {
  const [row] = await sql`select count(*)::int as n from payments.outbox where id in ${sql(ids)} and published_at is null`;
  return Number(row?.["n"]);
}
