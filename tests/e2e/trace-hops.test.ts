// Proves one trace follows a sandbox checkout across every hop: gateway → payments → ledger → payments' outbox →
// JetStream → webhooks → the webhook's HTTP request, with four services as separate processes exporting their spans
// over OTLP/HTTP to a collector in this test, and the receiver getting a traceparent of that trace.
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv } from "@treasury/testing";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { call } from "./stack.ts";

/** One span as the collector received it (OTLP/HTTP JSON: ids in hex). */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

interface OtlpJson {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value?: { stringValue?: string } }> };
    scopeSpans?: Array<{ spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string }> }>;
  }>;
}

/** Spans of one OTLP/HTTP JSON export request, each with its resource's service.name. */
function spansOf(body: OtlpJson): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = rs.resource?.attributes?.find((a) => a.key === "service.name")?.value?.stringValue ?? "";
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? "", name: s.name })),
    );
  });
}

/** A small HTTP server that records what it receives and answers 200. */
async function receiver(onRequest: (req: http.IncomingMessage, body: Buffer) => void): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      onRequest(req, Buffer.concat(chunks));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let env: TestEnv;
const children: SpawnedService[] = [];
const servers: http.Server[] = [];
const spans: ReceivedSpan[] = [];
const collectorErrors: string[] = [];
const webhooks: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
let collectorUrl: string;
let hookUrl: string;
let baseUrl: string;
let apiKey: string;

beforeAll(async () => {
  env = await setupTestEnv();
  const collector = await receiver((req, raw) => {
    try {
      if (req.url !== "/v1/traces") throw new Error(`unexpected path ${req.url}`);
      if (!String(req.headers["content-type"]).startsWith("application/json")) throw new Error(`unexpected content-type ${req.headers["content-type"]}`);
      const body = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
      spans.push(...spansOf(JSON.parse(body.toString("utf8")) as OtlpJson));
    } catch (err) {
      collectorErrors.push(String(err));
    }
  });
  const hooks = await receiver((req, body) => webhooks.push({ headers: req.headers, body: body.toString("utf8") }));
  servers.push(collector.server, hooks.server);
  collectorUrl = collector.url;
  hookUrl = `${hooks.url}/hook`;

  // Short export delays so spans reach the collector within the test's deadlines (the SDK's standard variable).
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_BSP_SCHEDULE_DELAY: "100", LOG_LEVEL: "warn" };
  const gatewayPort = await freePort();
  const start = async (name: string, extra: Record<string, string> = {}) => {
    const child = spawnService(name, env.env(name as Parameters<TestEnv["env"]>[0], { HEALTH_PORT: String(await freePort()), ...otel, ...extra }));
    children.push(child);
    return child;
  };
  const started = [
    await start("ledger"),
    await start("payments"),
    await start("webhooks", { WEBHOOK_POLL_INTERVAL_MS: "100", WEBHOOK_ALLOW_PRIVATE_URLS: "true" }),
    await start("gateway", { PORT: String(gatewayPort), ALT_PORT: String(await freePort()) }),
  ];
  await Promise.all(started.map((c) => c.ready));
  baseUrl = `http://127.0.0.1:${gatewayPort}`;
  const { org_id } = await createOrg(env.adminSql, { name: "Trace Marketplace" });
  apiKey = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
}, 180_000);

afterAll(async () => {
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(children.map((c) => c.exited));
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await env?.cleanup();
});

describe("one trace across the processes", () => {
  it("carries a checkout's traceparent from the gateway to the webhook request", { timeout: 120_000 }, async () => {
    const api = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const r = await call(baseUrl, "POST", path, { key: apiKey, body, headers });
      if (r.status >= 300) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    await api("/v1/webhooks", { action: "create", url: hookUrl, events: ["checkout.completed"] });
    const participant = `trace_${randomBytes(4).toString("hex")}`;
    await api("/v1/participants", { participant_id: participant, default_split_percent: 80 });
    const session = (await api("/v1/checkout-sessions", { participant_id: participant, amount: 2500 }))["checkout_session"] as { id: string };

    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    await api(`/v1/sandbox/checkouts/${session.id}/complete`, {}, { traceparent: `00-${traceId}-${callerSpanId}-01` });

    const hook = await waitFor(() => webhooks.find((w) => w.headers["x-webhook-event"] === "checkout.completed") ?? false, { timeoutMs: 30_000 });
    expect(JSON.parse(hook.body)).toMatchObject({ type: "checkout.completed" });
    const traceparent = String(hook.headers["traceparent"]);
    expect(traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const services = ["gateway", "payments", "ledger", "webhooks"];
    // Spans arrive in batches from four processes: wait until the trace is whole (every parent received).
    const whole = (found: ReceivedSpan[]) => {
      const ids = new Set([callerSpanId, ...found.map((s) => s.spanId)]);
      return found.every((s) => ids.has(s.parentSpanId));
    };
    const inTrace = await waitFor(
      () => {
        const found = spans.filter((s) => s.traceId === traceId);
        const delivered = found.some((s) => s.service === "webhooks" && s.name === "webhook POST");
        return services.every((svc) => found.some((s) => s.service === svc)) && delivered && whole(found) ? found : false;
      },
      { timeoutMs: 30_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; spans of the trace so far: ${JSON.stringify(spans.filter((s) => s.traceId === traceId))}`);
    });
    expect(collectorErrors).toEqual([]);
    expect(inTrace.length).toBeGreaterThanOrEqual(5);
    // The gateway's span continues the caller's; the receiver's parent is the delivery's own span.
    expect(inTrace.filter((s) => s.parentSpanId === callerSpanId).map((s) => s.service)).toEqual(["gateway"]);
    const delivery = inTrace.find((s) => s.name === "webhook POST");
    expect(traceparent.split("-")[2]).toBe(delivery?.spanId);
    // From the delivery up to the caller: webhooks (request, consumer), payments (publish, handler), gateway.
    const byId = new Map(inTrace.map((s) => [s.spanId, s]));
    const path: string[] = [];
    for (let s = delivery; s !== undefined; s = byId.get(s.parentSpanId)) path.push(s.service);
    expect(path).toEqual(["webhooks", "webhooks", "payments", "payments", "gateway", "gateway"]);
    // The ledger's posting hangs from the payments handler that published the event.
    const handler = byId.get(byId.get(delivery?.parentSpanId ?? "")?.parentSpanId ?? "")?.parentSpanId;
    const ledger = inTrace.find((s) => s.service === "ledger" && s.name === "ledger.post");
    expect(byId.get(ledger?.parentSpanId ?? "")?.parentSpanId).toBe(handler);
    // Every span of the trace hangs from another span of it, or from the caller's: one tree, no orphan.
    expect(whole(inTrace)).toBe(true);
  });
});
