// Proves RPC over real NATS: replies, typed errors, hidden internal errors, timeouts, no responders,
// not_implemented for unbuilt routes, malformed payloads, expired deadlines, load shedding and trace continuity.
import type { NatsConnection } from "@nats-io/transport-node";
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { DomainError, newRequestId, routesOf, rpcSubject } from "@treasury/contracts";
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats.ts";
import { rpcCall, rpcForward } from "./rpc-client.ts";
import { RpcServer } from "./rpc-server.ts";
import { initTelemetry, tracer } from "./telemetry.ts";
import { captureLogger, gate, installTestTracing, randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";

let spans: InMemorySpanExporter;
const prefix = randomPrefix();
const { log, lines } = captureLogger("payments");
let serverNc: NatsConnection;
let clientNc: NatsConnection;
let server: RpcServer;
/** Holds createWalletSession until the test opens it. */
let held = gate();

const auth: AuthContext = { org_id: "org_1", livemode: false, key_id: "key_1", scopes: null, request_id: "req_x" };
const subject = (op: string): string => rpcSubject(prefix, "payments", op);
const request = (body: unknown, extra: Record<string, unknown> = {}) => ({ auth, params: { id: "p1" }, query: {}, body, ...extra });

beforeAll(async () => {
  spans = installTestTracing();
  initTelemetry({ service: "payments" });

  serverNc = await connectNats({ url: TEST_NATS_URL, name: "rpc-server" });
  clientNc = await connectNats({ url: TEST_NATS_URL, name: "rpc-client" });
  server = new RpcServer({ nc: serverNc, prefix, service: "payments", log, concurrencyMax: 2 });
  server.handle("createCheckoutSession", async (req, ctx) => ({
    status: 201,
    body: { echo: req.body, param: req.params["id"], org: ctx.auth.org_id, request_id: ctx.requestId },
  }));
  server.handle("sandboxCompleteCheckout", async () => {
    throw new DomainError("checkout_expired", "Session cs_1 expired", { hint: "POST /v1/checkout-sessions", extra: { checkout_id: "cs_1" } });
  });
  server.handle("sandboxFailCheckout", async () => {
    throw new Error("connection string postgres://secret@db leaked");
  });
  server.handle("createWalletSession", async () => {
    await held.wait;
    return { body: { slow: true } };
  });
  server.handleRaw("post", async (payload) => ({ ok: true, status: 200, body: { got: payload } }));
  server.handleRaw("fwd-empty", async () => ({ ok: true, status: 204, body: {} }));
  server.answerUnimplemented(routesOf("payments").map((r) => r.operation));
  server.start();
  await serverNc.flush();
});

afterAll(async () => {
  held.open();
  await server?.drain();
  await clientNc?.drain();
  await serverNc?.drain();
});

describe("RpcServer + rpcCall", () => {
  it("answers with the handler's status and body, with the caller's request id", async () => {
    const requestId = newRequestId();
    const reply = await rpcCall(clientNc, subject("createCheckoutSession"), request({ amount: 5 }), { timeoutMs: 2000, requestId });
    expect(reply).toEqual({ ok: true, status: 201, body: { echo: { amount: 5 }, param: "p1", org: "org_1", request_id: requestId } });
  });

  it("maps a DomainError to a typed error reply", async () => {
    const reply = await rpcCall(clientNc, subject("sandboxCompleteCheckout"), request({}), { timeoutMs: 2000 });
    expect(reply).toEqual({
      ok: false,
      error: { code: "checkout_expired", message: "Session cs_1 expired", hint: "POST /v1/checkout-sessions", extra: { checkout_id: "cs_1" } },
    });
  });

  it("turns an unknown exception into internal_error without leaking its message, and logs the stack", async () => {
    const reply = await rpcCall(clientNc, subject("sandboxFailCheckout"), request({}), { timeoutMs: 2000 });
    expect(reply).toEqual({ ok: false, error: { code: "internal_error", message: "Internal server error" } });
    expect(JSON.stringify(reply)).not.toContain("secret");
    const line = lines.find((l) => l["msg"] === "rpc handler failed");
    expect((line?.["err"] as { stack?: string } | undefined)?.stack).toContain("secret@db leaked");
    expect(line?.["request_id"]).toMatch(/^req_/);
  });

  it("reports a slow service as service_timeout", async () => {
    held = gate();
    const reply = await rpcCall(clientNc, subject("createWalletSession"), request({}), { timeoutMs: 100 });
    expect(reply).toMatchObject({ ok: false, error: { code: "service_timeout" } });
    expect(server.inFlight()).toBe(1);
    held.open();
    await waitFor(() => server.inFlight() === 0, 2000, "slow handler to finish");
  });

  it("reports a subject nobody serves as service_unavailable", async () => {
    const reply = await rpcCall(clientNc, rpcSubject(prefix, "nobody", "op"), request({}), { timeoutMs: 2000 });
    expect(reply).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
  });

  it("answers not_implemented for a route operation without a handler", async () => {
    const reply = await rpcCall(clientNc, subject("spendSharedWallet"), request({}), { timeoutMs: 2000 });
    expect(reply).toMatchObject({ ok: false, error: { code: "not_implemented" } });
  });

  it("answers validation_error for a payload that is not an RpcRequest", async () => {
    const reply = await rpcCall(clientNc, subject("createCheckoutSession"), { nope: true }, { timeoutMs: 2000 });
    expect(reply).toMatchObject({ ok: false, error: { code: "validation_error" } });
    if (reply.ok) throw new Error("unreachable");
    expect(reply.error.details?.map((d) => d.path)).toContain("auth");
    const raw = await clientNc.request(subject("createCheckoutSession"), "{not json", { timeout: 2000 });
    expect(raw.json()).toMatchObject({ ok: false, error: { code: "validation_error" } });
  });

  it("forwards a success's body as the JSON text the service wrote, and errors as typed replies", async () => {
    const reply = await rpcForward(clientNc, subject("createCheckoutSession"), request({ amount: 5, note: 'a"}}' }), { timeoutMs: 2000, requestId: "req_fwd" });
    expect(reply.ok).toBe(true);
    if (!reply.ok) throw new Error("unreachable");
    expect(reply.status).toBe(201);
    expect(JSON.parse(reply.bodyJson)).toEqual({ echo: { amount: 5, note: 'a"}}' }, param: "p1", org: "org_1", request_id: "req_fwd" });
    // An empty body is "{}"; a typed error is the same as rpcCall's.
    const empty = await rpcForward(clientNc, `${prefix}svc.payments.fwd-empty`, {}, { timeoutMs: 2000 });
    expect(empty).toEqual({ ok: true, status: 204, bodyJson: "{}" });
    expect(await rpcForward(clientNc, subject("sandboxCompleteCheckout"), request({}), { timeoutMs: 2000 })).toEqual(
      await rpcCall(clientNc, subject("sandboxCompleteCheckout"), request({}), { timeoutMs: 2000 }),
    );
  });

  it("decodes a forwarded reply that is not in the kit's key order in full, and refuses a malformed one", async () => {
    const sub = serverNc.subscribe(`${prefix}raw.fwd.*`, {
      callback: (_e, m) => {
        const kind = m.subject.split(".").pop();
        if (kind === "reordered") m.respond(JSON.stringify({ status: 200, body: { a: 1 }, ok: true }));
        else if (kind === "badstatus") m.respond('{"ok":true,"status":"2e2","body":{}}');
        else m.respond('{"ok":true,"status":200,"body":{"a":');
      },
    });
    await serverNc.flush();
    expect(await rpcForward(clientNc, `${prefix}raw.fwd.reordered`, {}, { timeoutMs: 2000 })).toEqual({ ok: true, status: 200, bodyJson: '{"a":1}' });
    expect(await rpcForward(clientNc, `${prefix}raw.fwd.badstatus`, {}, { timeoutMs: 2000 })).toMatchObject({ ok: false, error: { code: "internal_error" } });
    expect(await rpcForward(clientNc, `${prefix}raw.fwd.truncated`, {}, { timeoutMs: 2000 })).toMatchObject({ ok: false, error: { code: "internal_error" } });
    sub.unsubscribe();
  });

  it("passes internal payloads through handleRaw", async () => {
    const reply = await rpcCall(clientNc, `${prefix}svc.payments.post`, { postings: [1] }, { timeoutMs: 2000 });
    expect(reply).toEqual({ ok: true, status: 200, body: { got: { postings: [1] } } });
  });

  it("drops a request whose deadline has passed, with a log line", async () => {
    const reply = await rpcCall(clientNc, subject("createCheckoutSession"), request({}, { deadline: Date.now() - 1 }), { timeoutMs: 300 });
    expect(reply).toMatchObject({ ok: false, error: { code: "service_timeout" } });
    expect(lines.some((l) => l["msg"] === "dropped request past its deadline")).toBe(true);
  });

  it("sheds load beyond concurrencyMax with service_unavailable", async () => {
    held = gate();
    const slow = [1, 2].map(() => rpcCall(clientNc, subject("createWalletSession"), request({}), { timeoutMs: 2000 }));
    await waitFor(() => server.inFlight() === 2, 2000, "two slow requests in flight");
    const shed = await rpcCall(clientNc, subject("createCheckoutSession"), request({}), { timeoutMs: 2000 });
    expect(shed).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
    held.open();
    expect(await Promise.all(slow)).toEqual([
      { ok: true, status: 200, body: { slow: true } },
      { ok: true, status: 200, body: { slow: true } },
    ]);
  });

  it("continues the caller's trace in a SERVER span named service.operation", async () => {
    spans.reset();
    await tracer().startActiveSpan("caller", async (root) => {
      await rpcCall(clientNc, subject("createCheckoutSession"), request({}), { timeoutMs: 2000 });
      root.end();
    });
    await waitFor(() => spans.getFinishedSpans().some((s) => s.name === "payments.createCheckoutSession"), 2000, "server span");
    const finished = spans.getFinishedSpans();
    const client = finished.find((s) => s.name === `rpc ${subject("createCheckoutSession")}`);
    const serverSpan = finished.find((s) => s.name === "payments.createCheckoutSession");
    const root = finished.find((s) => s.name === "caller");
    expect(client?.parentSpanContext?.spanId).toBe(root?.spanContext().spanId);
    expect(serverSpan?.spanContext().traceId).toBe(root?.spanContext().traceId);
    expect(serverSpan?.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
  });
});
