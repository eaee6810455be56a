// Proves the kit's operational series move on a service's /metrics as the things they measure happen: pool
// connections held and waited for, outbox events published and the age of the oldest unpublished one, consumer
// redeliveries, and the NATS connection lost and regained (with JetStream unreachable meanwhile).
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceDatabaseUrl, withTx } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { connectNats, ensureEventsStream } from "./nats.ts";
import { writeOutbox } from "./outbox-write.ts";
import { createService } from "./service.ts";
import type { Service, ServiceConfig } from "./service.ts";
import { captureLogger, createTestDatabase, deleteEventsStream, gate, randomPrefix, TEST_NATS_URL, testEvent, waitFor } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

/**
 * A TCP relay between the service and the real NATS server, so the test can take the network away and give it
 * back: cut() closes every relayed connection and stops listening; resume() listens on the same port again.
 */
class NatsRelay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly upstream: URL) {}

  async listen(): Promise<void> {
    const server = net.createServer((client) => {
      const up = net.connect(Number(this.upstream.port), this.upstream.hostname);
      for (const s of [client, up]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => s.destroy());
      }
      client.pipe(up).pipe(client);
      up.on("close", () => client.destroy());
      client.on("close", () => up.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => server?.close(r));
  }
}

const prefix = randomPrefix();
const durable = "metrics_test";
const { log } = captureLogger("payments");
let db: TestDatabase;
let rootDir: string;
let relay: NatsRelay;
let client: NatsConnection;
let svc: Service<ServiceConfig>;
let base: string;
/** Events whose first delivery the consumer fails, so the broker delivers them again. */
const failFirst = new Set<string>();
const handled: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-metrics-"));
  await migrateAll({ adminUrl: db.url, rootDir, services: ["payments"] });
  client = await connectNats({ url: TEST_NATS_URL, name: "metrics-test-client" });
  // The migrate step's work in a deployment: services only wait for the stream.
  await ensureEventsStream(client, prefix);
  relay = new NatsRelay(new URL(TEST_NATS_URL));
  await relay.listen();
  // The kit opens the pool and the NATS connection itself, as in production: their metrics are the kit's.
  svc = await createService({
    name: "payments",
    env: {
      DATABASE_URL: serviceDatabaseUrl(db.url, "payments"),
      NATS_URL: `nats://127.0.0.1:${relay.port}`,
      NATS_PREFIX: prefix,
      DB_POOL_MAX: "2",
      SHUTDOWN_TIMEOUT_MS: "5000",
    },
    deps: { log },
  });
  svc.consume({
    durable,
    filterSubject: `${prefix}evt.>`,
    handler: async (evt) => {
      if (failFirst.delete(evt.id)) throw new Error("first delivery fails on purpose");
      handled.push(evt.id);
    },
  });
  const { healthPort } = await svc.start();
  base = `http://127.0.0.1:${healthPort}`;
});

afterAll(async () => {
  await svc?.stop();
  if (client) await deleteEventsStream(client, prefix);
  await client?.drain();
  await relay?.cut();
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

/** One scrape of /metrics: the value of `name` whose labels include `labels` (undefined when absent). */
async function scrape(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-z_]+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("kit metrics", () => {
  it("count pool connections held by transactions and callers waiting for one", async () => {
    expect(await scrape("db_pool_connections_max")).toBe(2);
    expect(await scrape("db_pool_connections_held")).toBe(0);
    const acquiredBefore = (await scrape("db_pool_acquire_seconds_count")) ?? 0;
    const held = gate();
    let inside = 0;
    const hold = () =>
      withTx(svc.sql, async (tx) => {
        inside += 1;
        await tx`select 1`;
        await held.wait;
      });
    // Two transactions take both connections; the third waits for one.
    const running = [hold(), hold(), hold()];
    await waitFor(() => inside === 2, 5000, "two transactions to hold the pool");
    expect(await scrape("db_pool_connections_held")).toBe(2);
    expect(await scrape("db_pool_acquire_waiting")).toBe(1);
    held.open();
    await Promise.all(running);
    expect(await scrape("db_pool_connections_held")).toBe(0);
    expect(await scrape("db_pool_acquire_waiting")).toBe(0);
    expect(await scrape("db_pool_acquire_seconds_count")).toBeGreaterThanOrEqual(acquiredBefore + 3);
  });

  it("count published outbox events, and the oldest unpublished one's age grows while the relay is stopped", async () => {
    const publishedBefore = (await scrape("outbox_events_published_total")) ?? 0;
    await svc.relay?.stop();
    await withTx(svc.sql, (tx) => writeOutbox(tx, "payments", testEvent("org_lag")));
    await waitFor(async () => ((await scrape("outbox_lag_seconds")) ?? 0) > 0.2, 5000, "outbox lag to grow");
    expect(await scrape("outbox_events_published_total")).toBe(publishedBefore);
    await svc.relay?.start();
    await waitFor(async () => (await scrape("outbox_events_published_total")) === publishedBefore + 1, 5000, "the relay to publish the event");
    expect(await scrape("outbox_lag_seconds")).toBe(0);
  });

  it("count an event the consumer receives again after its handler failed", async () => {
    const before = (await scrape("consumer_redeliveries_total", { durable })) ?? 0;
    const id = await withTx(svc.sql, async (tx) => {
      const eventId = await writeOutbox(tx, "payments", testEvent("org_redelivery"));
      failFirst.add(eventId);
      return eventId;
    });
    // The failed delivery is handed back with a one-second delay, then handled.
    await waitFor(() => handled.includes(id), 10_000, "the redelivered event to be handled");
    expect(await scrape("consumer_redeliveries_total", { durable })).toBe(before + 1);
  });

  it("report the NATS connection lost and regained, and JetStream unreachable while it is lost", { timeout: 30_000 }, async () => {
    expect(await scrape("nats_connected")).toBe(1);
    expect(await scrape("nats_jetstream_available")).toBe(1);
    expect(await scrape("nats_reconnects_total")).toBe(0);
    await relay.cut();
    await waitFor(async () => (await scrape("nats_connected")) === 0, 10_000, "the client to see the connection lost");
    expect(await scrape("nats_disconnects_total")).toBe(1);
    expect(await scrape("nats_jetstream_available")).toBe(0);
    await relay.listen();
    await waitFor(async () => (await scrape("nats_connected")) === 1, 15_000, "the client to reconnect");
    expect(await scrape("nats_reconnects_total")).toBe(1);
    await waitFor(async () => (await scrape("nats_jetstream_available")) === 1, 10_000, "JetStream to answer again");
  });
});
