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
import type { NewEvent } from "./outbox.ts";

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

/** A test event of org `org` (outbox tests). */
export function testEvent(org: string, data: Record<string, unknown> = {}): NewEvent {
  return { type: "sandbox.test", org_id: org, livemode: false, data };
}

/** How many of these outbox rows (in the `payments` test schema) are still unpublished. */
export async function unpublishedCount(sql: postgres.Sql, ids: string[]): Promise<number> {
  const [row] = await sql`select count(*)::int as n from payments.outbox where id in ${sql(ids)} and published_at is null`;
  return Number(row?.["n"]);
}
