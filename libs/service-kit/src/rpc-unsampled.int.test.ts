// Proves the RPC server under the kit's own telemetry (no collector, so nothing is sampled): a handler runs in
// the caller's trace, its log lines carry the caller's trace id, and its own calls pass that trace on. Its
// own process: the kit must own the SDK here, which the other RPC tests' in-memory exporter would prevent.
import type { NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { rpcSubject } from "@treasury/contracts";
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats.ts";
import { rpcCall } from "./rpc-client.ts";
import { RpcServer } from "./rpc-server.ts";
import { initTelemetry, tracer, unsampledParentStaysUnsampled } from "./telemetry.ts";
import { captureLogger, randomPrefix, TEST_NATS_URL } from "./test-support.ts";

const prefix = randomPrefix();
const { log, lines } = captureLogger("payments");
let nc: NatsConnection;
let server: RpcServer;
let telemetry: { shutdown(): Promise<void> };
const auth: AuthContext = { org_id: "org_1", livemode: false, key_id: "key_1", scopes: null, request_id: "req_x" };
const seenByInner: string[] = [];

beforeAll(async () => {
  delete process.env.OTEL_TRACES_SAMPLER;
  telemetry = initTelemetry({ service: "payments" });
  nc = await connectNats({ url: TEST_NATS_URL, name: "rpc-unsampled" });
  server = new RpcServer({ nc, prefix, service: "payments", log, concurrencyMax: 8 });
  server.handle("getCheckoutSession", async (_req, ctx) => {
    ctx.log.info("handling");
    // A call the handler makes goes out in the same trace.
    const inner = await rpcCall(nc, rpcSubject(prefix, "payments", "listCheckoutSessions"), { auth, params: {}, query: {}, body: null }, { timeoutMs: 2000 });
    const span = trace.getActiveSpan();
    return {
      body: {
        trace_id: span?.spanContext().traceId ?? null,
        span_id: span?.spanContext().spanId ?? null,
        recording: span?.isRecording() ?? null,
        inner: inner.ok ? inner.body : null,
      },
    };
  });
  server.handle("listCheckoutSessions", async () => {
    seenByInner.push(trace.getActiveSpan()?.spanContext().traceId ?? "none");
    return { body: {} };
  });
  server.start();
  await nc.flush();
});

afterAll(async () => {
  await server?.drain();
  await nc?.drain();
  await telemetry?.shutdown();
});

describe("RpcServer under an unsampled caller", () => {
  // The caller's non-recording span stands in for the service's (no span object or random id per request).
  it("continues the caller's trace id in the handler, its logs and its own calls", async () => {
    expect(unsampledParentStaysUnsampled()).toBe(true);
    const root = tracer().startSpan("gateway request");
    expect(root.isRecording()).toBe(false);
    const traceId = root.spanContext().traceId;
    const reply = await rpcCall(
      nc,
      rpcSubject(prefix, "payments", "getCheckoutSession"),
      { auth, params: {}, query: {}, body: null },
      { timeoutMs: 2000, parent: trace.setSpan(ROOT_CONTEXT, root), requestId: "req_unsampled" },
    );
    root.end();
    expect(reply).toEqual({ ok: true, status: 200, body: { trace_id: traceId, span_id: root.spanContext().spanId, recording: false, inner: {} } });
    expect(seenByInner).toEqual([traceId]);
    expect(lines.find((l) => l["msg"] === "handling")).toMatchObject({ request_id: "req_unsampled", trace_id: traceId });
  });
});
