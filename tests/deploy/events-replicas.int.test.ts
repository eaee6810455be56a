// Proves EVENTS_REPLICAS reaches the EVENTS stream: the kit's config reads it (1 unless set), ensureEventsStream
// creates the stream with that many replicas and applies it to an existing stream, and a single NATS server
// refuses more than one (so a cluster's value cannot silently land on a lone server).
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsStreamName } from "@treasury/contracts";
import { BaseEnv, ConfigError, connectNats, ensureEventsStream, loadConfig, type NatsConnection } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv } from "@treasury/testing";

let env: TestEnv;
let nc: NatsConnection;

beforeAll(async () => {
  env = await setupTestEnv();
  nc = await connectNats({ url: env.natsUrl, name: "events-replicas-test" });
});
afterAll(async () => {
  await nc?.close();
  await env?.cleanup();
});

describe("EVENTS_REPLICAS", () => {
  it("is 1 unless set, and only 1–5", () => {
    expect(loadConfig(BaseEnv, { DATABASE_URL: "postgres://x" }).EVENTS_REPLICAS).toBe(1);
    expect(loadConfig(BaseEnv, { DATABASE_URL: "postgres://x", EVENTS_REPLICAS: "3" }).EVENTS_REPLICAS).toBe(3);
    expect(() => loadConfig(BaseEnv, { DATABASE_URL: "postgres://x", EVENTS_REPLICAS: "0" })).toThrow(ConfigError);
  });

  it("creates the stream with its replicas and a lone server refuses three", async () => {
    const jsm = await jetstreamManager(nc);
    await ensureEventsStream(nc, env.prefix, { replicas: 1 });
    expect((await jsm.streams.info(eventsStreamName(env.prefix))).config.num_replicas).toBe(1);
    // Existing stream: the update asks for 3 replicas, which a single server cannot hold.
    await expect(ensureEventsStream(nc, env.prefix, { replicas: 3 })).rejects.toThrow(/replicas|cluster/i);
    const fresh = `${env.prefix}r3.`;
    await expect(ensureEventsStream(nc, fresh, { replicas: 3 })).rejects.toThrow(/replicas|cluster/i);
    expect((await jsm.streams.info(eventsStreamName(env.prefix))).config.num_replicas).toBe(1);
  });
});
