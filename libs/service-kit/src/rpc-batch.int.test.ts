// Proves the RPC batch path over real NATS: requests made in one event-loop turn to one subject travel as one
// message, yet each keeps its own reply, request id, trace, deadline, timeout and place under concurrencyMax;
// replies are not held back by slow neighbours; failures of the whole batch reach every request in it.
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { context, trace } from "@opentelemetry/api";
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { DomainError, NATS_HEADERS, rpcSubject } from "@treasury/contracts";
import type { AuthContext, RpcReply } from "@treasury/contracts";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectNats } from "./nats.ts";
import { BATCH_SEND_AT, rpcCall, rpcForward } from "./rpc-client.ts";
import { RpcServer } from "./rpc-server.ts";
import { initTelemetry, tracer } from "./telemetry.ts";
import { captureLogger, gate, installTestTracing, randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";

let spans: InMemorySpanExporter;
const prefix = randomPrefix();
const { log } = captureLogger("receipts");
let serverNc: NatsConnection;
let clientNc: NatsConnection;
let spyNc: NatsConnection;
let server: RpcServer;
let tight: RpcServer;
let spy: Subscription;
let seen: Msg[] = [];
/** Holds the requests that ask for it until the test opens it. */
let held = gate();

const auth: AuthContext = { org_id: "org_1", livemode: false, key_id: "key_1", scopes: null, request_id: "req_x" };
const subject = (op: string, service = "receipts"): string => rpcSubject(prefix, service, op);
const request = (body: unknown) => ({ auth, params: {}, query: {}, body });

beforeAll(async () => {
  spans = installTestTracing();
  initTelemetry({ service: "receipts" });

  serverNc = await connectNats({ url: TEST_NATS_URL, name: "batch-server" });
  clientNc = await connectNats({ url: TEST_NATS_URL, name: "batch-client" });
  spyNc = await connectNats({ url: TEST_NATS_URL, name: "batch-spy" });
  server = new RpcServer({ nc: serverNc, prefix, service: "receipts", log, concurrencyMax: 64 });
  server.handle("echo", async (req, ctx) => ({ body: { echo: req.body, request_id: ctx.requestId } }));
  server.handle("slow", async (req) => {
    const { hold } = req.body as { hold: boolean };
    if (hold) await held.wait;
    return { body: { held: hold } };
  });
  server.handle("fail", async () => {
    throw new DomainError("receipt_not_found", "No receipt rc_1");
  });
  server.start();
  // A second service whose concurrencyMax is 2, to see shedding per request inside one batch.
  tight = new RpcServer({ nc: serverNc, prefix, service: "kyc", log, concurrencyMax: 2 });
  tight.handle("slow", async () => {
    await held.wait;
    return { body: { slow: true } };
  });
  tight.start();
  // Not in the queue group: sees a copy of every message sent to the receipts service.
  spy = spyNc.subscribe(`${prefix}svc.receipts.*`, { callback: (_err, msg) => void seen.push(msg) });
  // Answers what it gets with something that is not batch frames, as a service that cannot read batches would.
  spyNc.subscribe(subject("legacy"), { callback: (_err, msg) => void msg.respond('{"ok":false}') });
  await Promise.all([serverNc.flush(), spyNc.flush()]);
});

afterAll(async () => {
  held.open();
  spy?.unsubscribe();
  await server?.drain();
  await tight?.drain();
  await Promise.all([clientNc?.drain(), serverNc?.drain(), spyNc?.drain()]);
});

beforeEach(() => {
  seen = [];
});

const isBatch = (m: Msg): boolean => m.headers?.get(NATS_HEADERS.rpcBatch) === "1";

describe("RPC batches", () => {
  it("sends the requests one turn makes to one subject as one message, each answered with its own reply and request id", async () => {
    const calls = Array.from({ length: 20 }, (_, i) => rpcCall(clientNc, subject("echo"), request({ n: i }), { timeoutMs: 2000, requestId: `req_${i}` }));
    const replies = await Promise.all(calls);
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => ({ ok: true, status: 200, body: { echo: { n: i }, request_id: `req_${i}` } })));
    await waitFor(() => seen.length > 0, 2000, "spy copy");
    await spyNc.flush();
    expect(seen).toHaveLength(1);
    expect(isBatch(seen[0]!)).toBe(true);
  });

  it("sends a batch that reaches BATCH_SEND_AT requests at once, and the rest of the turn's at its end", async () => {
    const sentBefore = clientNc.stats().outMsgs;
    const calls = Array.from({ length: BATCH_SEND_AT }, (_, i) => rpcCall(clientNc, subject("echo"), request(i), { timeoutMs: 2000 }));
    // Still the same turn, yet the full batch is published (the client writes it to its socket after this microtask).
    expect(clientNc.stats().outMsgs - sentBefore).toBe(1);
    calls.push(...[0, 1, 2].map((i) => rpcCall(clientNc, subject("echo"), request(BATCH_SEND_AT + i), { timeoutMs: 2000 })));
    // The rest of the turn's requests wait for its end.
    expect(clientNc.stats().outMsgs - sentBefore).toBe(1);
    const replies = await Promise.all(calls);
    expect(replies.map((r) => (r.ok ? r.body["echo"] : r.error.code))).toEqual(Array.from({ length: BATCH_SEND_AT + 3 }, (_, i) => i));
    await waitFor(() => seen.length >= 2, 2000, "spy copies");
    expect(seen.map((m) => [isBatch(m), m.string().split('{"auth"').length - 1])).toEqual([
      [true, BATCH_SEND_AT],
      [true, 3],
    ]);
  });

  it("sends a request alone in its turn as a plain message", async () => {
    const reply = await rpcForward(clientNc, subject("echo"), request({ alone: true }), { timeoutMs: 2000, requestId: "req_alone" });
    expect(reply).toEqual({ ok: true, status: 200, bodyJson: '{"echo":{"alone":true},"request_id":"req_alone"}' });
    await waitFor(() => seen.length > 0, 2000, "spy copy");
    expect(seen).toHaveLength(1);
    expect(isBatch(seen[0]!)).toBe(false);
    expect(seen[0]!.json()).toMatchObject({ body: { alone: true } });
  });

  it("batches per subject: one turn's requests to two operations go as two messages", async () => {
    const replies = await Promise.all([
      rpcCall(clientNc, subject("echo"), request(1), { timeoutMs: 2000 }),
      rpcCall(clientNc, subject("fail"), request(2), { timeoutMs: 2000 }),
      rpcCall(clientNc, subject("echo"), request(3), { timeoutMs: 2000 }),
      rpcCall(clientNc, subject("fail"), request(4), { timeoutMs: 2000 }),
    ]);
    expect(replies.map((r) => (r.ok ? r.body["echo"] : r.error.code))).toEqual([1, "receipt_not_found", 3, "receipt_not_found"]);
    await waitFor(() => seen.length >= 2, 2000, "spy copies");
    expect(seen.map((m) => [m.subject, isBatch(m)])).toEqual([
      [subject("echo"), true],
      [subject("fail"), true],
    ]);
  });

  it("continues each caller's own trace for every request of a batch", async () => {
    spans.reset();
    const roots = [0, 1, 2].map((i) => tracer().startSpan(`caller ${i}`));
    await Promise.all(roots.map((root) => rpcCall(clientNc, subject("echo"), request({}), { timeoutMs: 2000, parent: trace.setSpan(context.active(), root) })));
    for (const root of roots) root.end();
    await waitFor(() => spans.getFinishedSpans().filter((s) => s.name === "receipts.echo").length === 3, 2000, "server spans");
    const finished = spans.getFinishedSpans();
    expect(isBatch(seen[0]!)).toBe(true);
    for (const root of roots) {
      const client = finished.find((s) => s.kind === 2 && s.parentSpanContext?.spanId === root.spanContext().spanId);
      const serverSpan = finished.find((s) => s.name === "receipts.echo" && s.parentSpanContext?.spanId === client?.spanContext().spanId);
      expect(client).toBeDefined();
      expect(serverSpan?.spanContext().traceId).toBe(root.spanContext().traceId);
    }
  });

  it("answers the fast requests of a batch without waiting for a slow one", async () => {
    held = gate();
    const slow = rpcCall(clientNc, subject("slow"), request({ hold: true }), { timeoutMs: 3000 });
    const fast = [1, 2, 3].map(() => rpcCall(clientNc, subject("slow"), request({ hold: false }), { timeoutMs: 3000 }));
    // Answered while the slow one of their batch is still held.
    expect(await Promise.all(fast)).toEqual([1, 2, 3].map(() => ({ ok: true, status: 200, body: { held: false } })));
    expect(server.inFlight()).toBe(1);
    held.open();
    expect(await slow).toEqual({ ok: true, status: 200, body: { held: true } });
    await spyNc.flush();
    expect(seen.filter(isBatch)).toHaveLength(1);
  });

  it("times each request of a batch out on its own", async () => {
    held = gate();
    const [late, onTime] = await Promise.all([
      rpcCall(clientNc, subject("slow"), request({ hold: true }), { timeoutMs: 100 }),
      rpcCall(clientNc, subject("slow"), request({ hold: false }), { timeoutMs: 2000 }),
    ]);
    expect(late).toMatchObject({ ok: false, error: { code: "service_timeout" } });
    expect(onTime).toEqual({ ok: true, status: 200, body: { held: false } });
    // The late reply still comes, after its request gave up, and is dropped; the client answers on as before.
    held.open();
    await waitFor(() => server.inFlight() === 0, 2000, "the held request to finish");
    expect(await rpcCall(clientNc, subject("echo"), request("after"), { timeoutMs: 2000 })).toMatchObject({ ok: true, body: { echo: "after" } });
  });

  it("sheds, request by request, what a batch brings beyond concurrencyMax", async () => {
    held = gate();
    const answered: RpcReply[] = [];
    const calls = [1, 2, 3, 4, 5].map((i) => rpcCall(clientNc, subject("slow", "kyc"), request(i), { timeoutMs: 2000 }).then((r) => (answered.push(r), r)));
    // Two of the batch run (held); the three beyond concurrencyMax are answered at once.
    await waitFor(() => answered.length === 3, 2000, "the shed requests answered");
    expect(answered.map((r) => (r.ok ? "ok" : r.error.code))).toEqual(["service_unavailable", "service_unavailable", "service_unavailable"]);
    expect(tight.inFlight()).toBe(2);
    held.open();
    const replies = await Promise.all(calls);
    expect(replies.filter((r) => r.ok)).toHaveLength(2);
  });

  it("reports every request of a batch nobody serves as service_unavailable", async () => {
    const replies = await Promise.all([1, 2, 3].map(() => rpcCall(clientNc, subject("nobody", "payouts"), request({}), { timeoutMs: 2000 })));
    for (const r of replies) expect(r).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
  });

  it("fails every request of a batch answered with something other than batch frames as internal_error", async () => {
    const replies = await Promise.all([1, 2].map(() => rpcCall(clientNc, subject("legacy"), request({}), { timeoutMs: 2000 })));
    for (const r of replies) expect(r).toMatchObject({ ok: false, error: { code: "internal_error", message: "Service answered with a malformed reply" } });
  });

  it("answers a malformed batch with validation_error and runs nothing", async () => {
    const h = natsHeaders();
    h.set(NATS_HEADERS.rpcBatch, "1");
    const reply = await clientNc.request(subject("echo"), "3:abc", { timeout: 2000, headers: h });
    expect(reply.json()).toMatchObject({ ok: false, error: { code: "validation_error", message: "Malformed RPC batch" } });
    const v2 = natsHeaders();
    v2.set(NATS_HEADERS.rpcBatch, "2");
    const unknownVersion = await clientNc.request(subject("echo"), "1:01:x1:y", { timeout: 2000, headers: v2 });
    expect(unknownVersion.json()).toMatchObject({ ok: false, error: { code: "validation_error" } });
  });

  it("sends the batched replies of requests in flight when the server drains", async () => {
    const nc = await connectNats({ url: TEST_NATS_URL, name: "batch-drain" });
    const own = new RpcServer({ nc, prefix, service: "refunds", log, concurrencyMax: 8 });
    held = gate();
    own.handle("slow", async () => {
      await held.wait;
      return { body: { done: true } };
    });
    own.start();
    await nc.flush();
    const calls = [1, 2, 3].map(() => rpcCall(clientNc, subject("slow", "refunds"), request({}), { timeoutMs: 3000 }));
    await waitFor(() => own.inFlight() === 3, 2000, "three requests in flight");
    let drained = false;
    const draining = own.drain().then(() => void (drained = true));
    // A round trip behind the server's unsubscribes: it has stopped taking requests and waits for the three.
    await nc.flush();
    expect(drained).toBe(false);
    held.open();
    await draining;
    await nc.drain();
    expect(await Promise.all(calls)).toEqual([1, 2, 3].map(() => ({ ok: true, status: 200, body: { done: true } })));
  });
});
