// Proves one trace per request across gateway → NATS → service (OTel in-memory exporter), and graceful shutdown finishing an in-flight request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { connect } from "@nats-io/transport-node";
import { setupTestEnv, waitFor, type TestEnv, natsOptions } from "@treasury/testing";
import { buildGateway } from "../../services/gateway/src/service.ts";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { buildKyc } from "../../services/kyc/src/service.ts";
import { call } from "./stack.ts";

// Registered before any service is built, so the kit's telemetry leaves this provider in place.
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

let env: TestEnv;
let key: string;
beforeAll(async () => {
  env = await setupTestEnv();
  const { org_id } = await createOrg(env.adminSql, { name: "o" });
  key = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
});
afterAll(async () => {
  await env?.cleanup();
});

describe("tracing", () => {
  it("puts the gateway's HTTP span, the NATS client span and the service's span in one trace, continuing the caller's traceparent", async () => {
    const kyc = await buildKyc(env.env("kyc"));
    await kyc.start();
    const gw = await buildGateway({ ...env.env("gateway"), PORT: "0", ALT_PORT: "0" });
    try {
      exporter.reset();
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      const r = await call(`http://127.0.0.1:${gw.ports.main}`, "GET", "/v1/kyc/business", {
        key,
        headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      });
      expect(r.status).toBeLessThan(500);
      // Spans end after the answer is written: wait until both ends have finished theirs.
      const spans = await waitFor(() => {
        const found = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
        const names = new Set(found.map((s) => s.name));
        return names.has("HTTP GET /v1/kyc/business") && names.has("kyc.getBusinessVerification") ? found : false;
      });
      const names = spans.map((s) => s.name);
      expect(names).toEqual(expect.arrayContaining(["HTTP GET /v1/kyc/business", "kyc.getBusinessVerification"]));
      const http = spans.find((s) => s.name.startsWith("HTTP"))!;
      const server = spans.find((s) => s.name === "kyc.getBusinessVerification")!;
      // The service span descends from the gateway span (directly or through the client span).
      const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
      let cur = server;
      const chain: string[] = [];
      while (cur.parentSpanContext?.spanId && byId.has(cur.parentSpanContext.spanId)) {
        cur = byId.get(cur.parentSpanContext.spanId)!;
        chain.push(cur.name);
      }
      expect(chain).toContain(http.name);
      expect(http.parentSpanContext?.spanId).toBe("00f067aa0ba902b7");
    } finally {
      await gw.stop();
      await kyc.stop();
    }
  });
});

describe("graceful shutdown", () => {
  it("finishes a request that is in flight when SIGTERM-style stop begins, and takes no new ones", async () => {
    const gw = await buildGateway({ ...env.env("gateway"), PORT: "0", ALT_PORT: "0", RPC_TIMEOUT_MS: "5000" });
    const nc = await connect(natsOptions(env.natsUrl));
    // A slow service: it answers only when the test lets it, after the stop has begun.
    let received: (() => void) | undefined;
    nc.subscribe(`${env.prefix}svc.ledger.listParticipants`, {
      callback: (_e, m) => {
        received = () => m.respond(JSON.stringify({ ok: true, status: 200, body: { participants: [] } }));
      },
    });
    await nc.flush();
    const base = `http://127.0.0.1:${gw.ports.main}`;
    const inflight = call(base, "GET", "/v1/participants", { key });
    const answer = await waitFor(() => received ?? false);
    const stopping = gw.stop();
    answer();
    const r = await inflight;
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, participants: [] });
    await stopping;
    await expect(fetch(`${base}/v1/health-check`)).rejects.toThrow();
    await nc.close();
  });
});
