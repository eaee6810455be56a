// Proves that the NATS client internals the kit relies on (nats-internals.ts, ADR 0006) are there and behave as
// the kit expects with the pinned @nats-io/transport-node: an upgrade that moves the connection's options or
// changes how publish reads headers fails here, by name, rather than losing replies or headers in production.
import { createRequire } from "node:module";
import { connect } from "@nats-io/transport-node";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { NATS_HEADERS, rpcSubject } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats.ts";
import { asPublishHeaders, inboxPrefix, natsInternals } from "./nats-internals.ts";
import { rpcCall } from "./rpc-client.ts";
import { RequestHeaders } from "./rpc-wire.ts";
import { randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";

const prefix = randomPrefix();
const require = createRequire(import.meta.url);
const installed = (require("@nats-io/transport-node/package.json") as { version: string }).version;
const pinned = (require("../package.json") as { dependencies: Record<string, string> }).dependencies["@nats-io/transport-node"];
let nc: NatsConnection;
let prefixed: NatsConnection;
const received: Msg[] = [];

beforeAll(async () => {
  nc = await connectNats({ url: TEST_NATS_URL, name: "nats-internals-test" });
  prefixed = await connect({ servers: TEST_NATS_URL, inboxPrefix: `${prefix}inbox` });
  nc.subscribe(`${prefix}sink`, { callback: (_err, msg) => void received.push(msg) });
  // Answers with the subject its reply goes to, so the test sees the caller's inbox.
  nc.subscribe(rpcSubject(prefix, "kyc", "whereToReply"), {
    callback: (_err, msg) => void msg.respond(JSON.stringify({ ok: true, status: 200, body: { reply: msg.reply } })),
  });
  await nc.flush();
});

afterAll(async () => {
  await prefixed?.drain();
  await nc?.drain();
});

describe("NATS client internals (nats-internals.ts)", () => {
  it("are there in the pinned client", () => {
    expect(installed).toBe(pinned);
    expect(natsInternals(nc)).toEqual({ options: "supported", headerEncode: "supported" });
  });

  it("reports a connection without them as unsupported, with the default inbox prefix", () => {
    const bare = {} as unknown as NatsConnection;
    expect(natsInternals(bare).options).toBe("unsupported");
    expect(inboxPrefix(bare)).toBe("");
  });

  it("reads the connection's inbox prefix, and the kit's RPC replies arrive under it", async () => {
    expect(inboxPrefix(nc)).toBe("");
    expect(inboxPrefix(prefixed)).toBe(`${prefix}inbox`);
    const reply = await rpcCall(prefixed, rpcSubject(prefix, "kyc", "whereToReply"), {}, { timeoutMs: 2000 });
    expect(reply.ok ? String(reply.body["reply"]).startsWith(`${prefix}inbox.`) : reply.error).toBe(true);
  });

  it("publishes headers the kit encoded itself, which arrive as the client's own would", async () => {
    const h = new RequestHeaders();
    h.set(NATS_HEADERS.requestId, "req_internals");
    h.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    nc.publish(`${prefix}sink`, "with headers", { headers: asPublishHeaders(h) });
    await waitFor(() => received.length === 1, 2000, "the message");
    const got = received[0]?.headers;
    expect(got?.get(NATS_HEADERS.requestId)).toBe("req_internals");
    expect(got?.get("traceparent")).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    expect(got?.keys().sort()).toEqual([NATS_HEADERS.requestId, "traceparent"].sort());
    expect(received[0]?.string()).toBe("with headers");
  });
});
