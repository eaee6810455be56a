// Proves a service waits at start for the migrate step's EVENTS stream (ADR 0011): while the stream does not exist it
// says so in its log and asks again, and it goes on as soon as the stream is there; it never creates the stream itself.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { eventsStreamName } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awaitEventsStream, connectNats, ensureEventsStream } from "./nats.ts";
import { captureLogger, deleteEventsStream, randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";

let nc: NatsConnection;
const prefix = randomPrefix();

beforeAll(async () => {
  nc = await connectNats({ url: TEST_NATS_URL, name: "events-stream-test" });
});
afterAll(async () => {
  await deleteEventsStream(nc, prefix);
  await nc?.close();
});

describe("awaitEventsStream", () => {
  it("waits, with a log line, until the migrate step has created the stream", async () => {
    // Proves the wait is on the stream's existence: unresolved (and the stream still absent) until ensureEventsStream ran.
    const { log, lines } = captureLogger();
    let done = false;
    const waiting = awaitEventsStream(nc, prefix, { replicas: 1, log }).then(() => void (done = true));
    await waitFor(() => lines.some((l) => String(l["msg"]).includes("waiting for the migrate step")), 5000, "the waiting log line");
    expect(done).toBe(false);
    const jsm = await jetstreamManager(nc);
    await expect(jsm.streams.info(eventsStreamName(prefix))).rejects.toThrow(/not found/i);
    await ensureEventsStream(nc, prefix);
    await waiting;
    expect(done).toBe(true);
  });
});
