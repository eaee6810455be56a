// Proves the webhooks API end to end through the gateway: the {success, data} envelope and 201 on create, scope
// and environment checks, precise error codes, and a sandbox test event delivered, signed, to a real receiver.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { waitFor } from "@treasury/testing";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

let stack: Stack;
let server: http.Server;
const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  stack = await startStack({ services: ["webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("thanks");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await stack?.stop();
});

const hookUrl = (): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const webhooks = (key: string, body: unknown) => call(stack.baseUrl, "POST", "/v1/webhooks", { key, body });

it("create answers 201 {success, request_id, data} with the secret; list answers the endpoints without it", async () => {
  // Proves the management envelope of docs/api.md, Webhooks through the gateway.
  const created = await webhooks(stack.testKey, { action: "create", url: hookUrl(), description: "e2e", events: ["payout.failed"] });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ success: true, data: { url: hookUrl(), description: "e2e", events: ["payout.failed"], is_active: true } });
  expect(String(created.body["request_id"])).toMatch(/^req_/);
  const data = created.body["data"] as { id: string; secret: string };
  expect(data.secret).toMatch(/^whsec_/);
  const list = await webhooks(stack.testKey, { action: "list" });
  expect(list.status).toBe(200);
  expect(list.body["data"]).toEqual([expect.objectContaining({ id: data.id })]);
  expect(JSON.stringify(list.body)).not.toContain(data.secret);
  // The live environment of the same org sees none of it.
  expect((await webhooks(stack.liveKey, { action: "list" })).body["data"]).toEqual([]);
  const cross = await webhooks(stack.liveKey, { action: "delete", endpoint_id: data.id });
  expect(cross.status).toBe(404);
  expect(cross.body).toMatchObject({ success: false, error_code: "webhook_endpoint_not_found" });
});

it("bad input answers the error envelope with precise codes; a key without the webhooks scope is refused", async () => {
  // Proves error mapping (400/404) and fail-closed scopes on both webhook routes.
  const badAction = await webhooks(stack.testKey, { action: "nope" });
  expect(badAction.status).toBe(400);
  expect(badAction.body).toMatchObject({ success: false, error_code: "validation_error" });
  const badUrl = await webhooks(stack.testKey, { action: "create", url: "http://example.com/h" });
  expect(badUrl.status).toBe(400);
  expect(badUrl.body).toMatchObject({ error_code: "invalid_webhook_url" });
  const liveHttp = await webhooks(stack.liveKey, { action: "create", url: hookUrl() });
  expect(liveHttp.body).toMatchObject({ error_code: "invalid_webhook_url" });
  const badEvents = await webhooks(stack.testKey, { action: "create", url: hookUrl(), events: ["ledger.transaction.posted"] });
  expect(badEvents.status).toBe(400);
  expect(badEvents.body["details"]).toEqual([{ path: "events.0", message: expect.any(String) }]);
  expect((await webhooks(stack.testKey, { action: "rotate_secret", endpoint_id: "we_nope" })).status).toBe(404);
  const noDelivery = await webhooks(stack.testKey, { action: "retry", delivery_id: "whd_nope" });
  expect(noDelivery.status).toBe(404);
  expect(noDelivery.body).toMatchObject({ error_code: "webhook_delivery_not_found" });
  const readOnly = (await stack.key({ scopes: ["read"] })).api_key;
  expect((await webhooks(readOnly, { action: "list" })).status).toBe(403);
  expect((await call(stack.baseUrl, "POST", "/v1/sandbox/webhooks/test", { key: readOnly, body: {} })).status).toBe(403);
});

it("the sandbox test webhook is delivered signed to matching endpoints; live keys get 403 sandbox_only", async () => {
  // Proves sandboxSendTestWebhook end to end: outbox → EVENTS → fan-out → signed POST, and the delivery log.
  const live = await call(stack.baseUrl, "POST", "/v1/sandbox/webhooks/test", { key: stack.liveKey, body: {} });
  expect(live.status).toBe(403);
  expect(live.body).toMatchObject({ success: false, error_code: "sandbox_only" });

  const created = await webhooks(stack.testKey, { action: "create", url: hookUrl() });
  const endpoint = created.body["data"] as { id: string; secret: string };
  const sent = await call(stack.baseUrl, "POST", "/v1/sandbox/webhooks/test", { key: stack.testKey, body: { idempotency_key: "e2e-1" } });
  expect(sent.status).toBe(200);
  // Two endpoints match payout.failed: the filtered one from the first test and this "*" one.
  expect(sent.body).toMatchObject({ success: true, event_type: "payout.failed", webhook_deliveries_queued: 2 });
  const eventId = String(sent.body["event_id"]);
  const mine = await waitFor(() => {
    const got = received.filter((r) => (JSON.parse(r.body) as { id: string }).id === eventId);
    return got.length === 2 ? got : false;
  });
  const verified = mine.map((r) => {
    try {
      return new Webhook(endpoint.secret).verify(r.body, r.headers as Record<string, string>);
    } catch {
      return null;
    }
  });
  expect(verified.filter((v) => v !== null)).toEqual([expect.objectContaining({ id: eventId, type: "payout.failed", livemode: false, mode: "sandbox" })]);
  const log = await waitFor(async () => {
    const r = await webhooks(stack.testKey, { action: "deliveries", endpoint_id: endpoint.id, status: "delivered" });
    return (r.body["data"] as unknown[]).length === 1 ? r : false;
  });
  expect(log.body["data"]).toEqual([
    expect.objectContaining({ event_id: eventId, status: "delivered", attempts: 1, response_status: 200, response_body: "thanks" }),
  ]);
  const tested = await webhooks(stack.testKey, { action: "test", endpoint_id: endpoint.id });
  expect(tested.body).toMatchObject({ success: true, data: { delivered: true, status: 200 } });
});
