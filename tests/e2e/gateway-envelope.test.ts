// Proves every envelope status of docs/api.md, Conventions, the headers on every response, health, OpenAPI, and that random input never breaks the envelope.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { connect } from "@nats-io/transport-node";
import { ROUTES, buildOpenApiDocument } from "@treasury/contracts";
import { setupTestEnv, waitFor, type TestEnv, natsOptions } from "@treasury/testing";
import { buildGateway, type Gateway } from "../../services/gateway/src/service.ts";
import { createApiKey, createOrg, setMaintenance } from "../../services/gateway/src/admin.ts";
import { call, startStack, type Stack } from "./stack.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

function expectEnvelope(r: { status: number; headers: Headers; body: Record<string, unknown> }) {
  expect(r.headers.get("service-version")).toBe("2026-03-01");
  expect(r.headers.get("x-request-id")).toBeTruthy();
  expect(r.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/);
  expect(r.headers.get("x-ratelimit-reset")).toMatch(/^\d+$/);
  expect(r.headers.get("content-type")).toContain("application/json");
  if (r.status >= 400) {
    expect(r.body.success).toBe(false);
    expect(typeof r.body.error).toBe("string");
    expect(typeof r.body.error_code).toBe("string");
    expect(r.body.request_id).toBe(r.headers.get("x-request-id"));
  }
}

describe("envelope statuses", () => {
  it("400 invalid_json for a malformed body", async () => {
    const r = await call(stack.baseUrl, "POST", "/v1/participants", {
      key: stack.testKey,
      rawBody: '{"participant_id": ',
      headers: { "content-type": "application/json" },
    });
    expect(r.status).toBe(400);
    expect(r.body.error_code).toBe("invalid_json");
    expectEnvelope(r);
  });

  it("400 for bodies nested 10,000 deep and lone surrogates, 415 for a charset other than UTF-8: never a 500", async () => {
    const deep = `{"participant_id":"p_deep","metadata":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`;
    const cases = [
      { rawBody: deep, type: "application/json", status: 400, code: "invalid_json" },
      { rawBody: '{"participant_id":"p_\\ud800x","display_name":"a\\ud800"}', type: "application/json", status: 400, code: "validation_error" },
      { rawBody: '{"participant_id":"p_utf16"}', type: "application/json; charset=utf-16", status: 415, code: "unsupported_media_type" },
    ];
    for (const c of cases) {
      const r = await call(stack.baseUrl, "POST", "/v1/participants", { key: stack.testKey, rawBody: c.rawBody, headers: { "content-type": c.type } });
      expect([r.status, r.body.error_code], c.rawBody.slice(0, 40)).toEqual([c.status, c.code]);
      expectEnvelope(r);
    }
  });

  it("415 unsupported_media_type for a non-JSON body", async () => {
    const r = await call(stack.baseUrl, "POST", "/v1/participants", {
      key: stack.testKey,
      rawBody: "participant_id=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(r.status).toBe(415);
    expect(r.body.error_code).toBe("unsupported_media_type");
    expectEnvelope(r);
  });

  it("413 payload_too_large over 64 KiB, while imports take up to 1 MiB", async () => {
    const big = JSON.stringify({ participant_id: "p1", metadata: { blob: "x".repeat(70 * 1024) } });
    const r = await call(stack.baseUrl, "POST", "/v1/participants", { key: stack.testKey, rawBody: big, headers: { "content-type": "application/json" } });
    expect(r.status).toBe(413);
    expect(r.body.error_code).toBe("payload_too_large");
    expectEnvelope(r);
    const imp = JSON.stringify({ action: "parse_preview", format: "csv", data: "a,b\n".repeat(50_000) });
    const ok = await call(stack.baseUrl, "POST", "/v1/import-transactions", {
      key: stack.testKey,
      rawBody: imp,
      headers: { "content-type": "application/json" },
    });
    expect(ok.status).not.toBe(413);
    const tooBig = JSON.stringify({ action: "parse_preview", format: "csv", data: "x".repeat(1100 * 1024) });
    const no = await call(stack.baseUrl, "POST", "/v1/import-transactions", {
      key: stack.testKey,
      rawBody: tooBig,
      headers: { "content-type": "application/json" },
    });
    expect(no.status).toBe(413);
  });

  it("404 route_not_found and 405 method_not_allowed", async () => {
    const nf = await call(stack.baseUrl, "GET", "/v1/nope", { key: stack.testKey });
    expect(nf.status).toBe(404);
    expect(nf.body.error_code).toBe("route_not_found");
    expectEnvelope(nf);
    const na = await call(stack.baseUrl, "DELETE", "/v1/participants", { key: stack.testKey });
    expect(na.status).toBe(405);
    expect(na.body.error_code).toBe("method_not_allowed");
    expect(na.headers.get("allow")).toContain("GET");
    expectEnvelope(na);
  });

  it("400 validation_error with details, amount_too_large and invalid_limit", async () => {
    const v = await call(stack.baseUrl, "POST", "/v1/checkout-sessions", { key: stack.testKey, body: { amount: "10" } });
    expect(v.status).toBe(400);
    expect(v.body.error_code).toBe("validation_error");
    const paths = (v.body.details as { path: string }[]).map((d) => d.path);
    expect(paths).toEqual(expect.arrayContaining(["participant_id", "amount"]));
    expectEnvelope(v);
    for (const amount of [-1, 0, 1.5]) {
      const bad = await call(stack.baseUrl, "POST", "/v1/transfers", { key: stack.testKey, body: { amount, reference_id: "r1" } });
      expect(bad.body.error_code, String(amount)).toBe("validation_error");
    }
    const big = await call(stack.baseUrl, "POST", "/v1/transfers", { key: stack.testKey, body: { amount: 100_000_000_001, reference_id: "r1" } });
    expect(big.status).toBe(400);
    expect(big.body.error_code).toBe("amount_too_large");
    const lim = await call(stack.baseUrl, "GET", "/v1/wallets?limit=101", { key: stack.testKey });
    expect(lim.status).toBe(400);
    expect(lim.body.error_code).toBe("invalid_limit");
    const notObject = await call(stack.baseUrl, "POST", "/v1/participants", { key: stack.testKey, body: [1, 2] });
    expect(notObject.body.error_code).toBe("validation_error");
  });

  it("400 validation_error for U+0000 in a body or query string (PostgreSQL text cannot hold it), nothing forwarded", async () => {
    const body = await call(stack.baseUrl, "POST", "/v1/participants", { key: stack.testKey, body: { participant_id: "p_nul", display_name: "a\u0000b" } });
    expect(body.status).toBe(400);
    expect(body.body.error_code).toBe("validation_error");
    const query = await call(stack.baseUrl, "GET", "/v1/wallets?owner_id=a%00b", { key: stack.testKey });
    expect(query.status).toBe(400);
    expect(query.body.error_code).toBe("validation_error");
    const read = await call(stack.baseUrl, "GET", "/v1/participants/p_nul", { key: stack.testKey });
    expect(read.body.error_code).toBe("participant_not_found");
  });

  it("400 unsupported_version for an unknown pinned Service-Version or Soledgic-Version, or two that differ; the known one is accepted", async () => {
    const bad = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "service-version": "1999-01-01" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error_code).toBe("unsupported_version");
    expectEnvelope(bad);
    const good = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "service-version": "2026-03-01" } });
    expect(good.body.error_code).not.toBe("unsupported_version");
    // Soledgic-Version (the official SDK's header) pins the same way; two different pins are refused.
    const sdk = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "soledgic-version": "2026-03-01" } });
    expect(sdk.status).toBe(200);
    const sdkBad = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "soledgic-version": "2020-01-01" } });
    expect([sdkBad.status, sdkBad.body.error_code]).toEqual([400, "unsupported_version"]);
    const both = await call(stack.baseUrl, "GET", "/v1/participants", {
      key: stack.testKey,
      headers: { "service-version": "2026-03-01", "soledgic-version": "2025-01-01" },
    });
    expect([both.status, both.body.error_code]).toEqual([400, "unsupported_version"]);
  });

  it("503 maintenance with Retry-After and retry_after while the operator switch is on; health-check still answers", async () => {
    await setMaintenance(stack.env.adminSql, { enabled: true, retry_after_s: 120, message: "Scheduled maintenance" });
    const down = await waitFor(
      async () => {
        const r = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey });
        return r.status === 503 ? r : false;
      },
      { timeoutMs: 2_000, intervalMs: 20 },
    );
    expect(down.body).toMatchObject({ success: false, error_code: "maintenance", error: "Scheduled maintenance", retry_after: 120 });
    expect(down.headers.get("retry-after")).toBe("120");
    expectEnvelope(down);
    expect((await call(stack.baseUrl, "GET", "/v1/health-check")).status).toBe(200);
    await setMaintenance(stack.env.adminSql, { enabled: false, retry_after_s: 60, message: "" });
    await waitFor(async () => (await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey })).status === 200, {
      timeoutMs: 2_000,
      intervalMs: 20,
    });
  });

  it("echoes a client's valid X-Request-Id and replaces an invalid one", async () => {
    const mine = "req_0123456789abcdef0123456789abcdef";
    const r = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "x-request-id": mine } });
    expect(r.headers.get("x-request-id")).toBe(mine);
    expect(r.body.request_id).toBe(mine);
    const bad = await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey, headers: { "x-request-id": "<script>" } });
    expect(bad.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
  });
});

describe("service failures", () => {
  let env: TestEnv;
  let gw: Gateway;
  let key: string;
  beforeAll(async () => {
    // A gateway on a prefix where no real service runs; raw NATS responders play broken services.
    env = await setupTestEnv();
    gw = await buildGateway({ ...env.env("gateway"), PORT: "0", ALT_PORT: "0", RPC_TIMEOUT_MS: "300", HEALTH_CHECK_TIMEOUT_MS: "200" });
    const { org_id } = await createOrg(env.adminSql, { name: "o" });
    key = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
  });
  afterAll(async () => {
    await gw?.stop();
    await env?.cleanup();
  });
  const url = () => `http://127.0.0.1:${gw.ports.main}`;

  it("503 service_unavailable when no instance of the service is running", async () => {
    const r = await call(url(), "GET", "/v1/participants", { key });
    expect(r.status).toBe(503);
    expect(r.body.error_code).toBe("service_unavailable");
    expectEnvelope(r);
  });

  it("504 service_timeout when the service does not answer in time, and a generic 500 for a broken reply", async () => {
    const nc = await connect(natsOptions(env.natsUrl));
    nc.subscribe(`${env.prefix}svc.ledger.listParticipants`, { callback: () => {} });
    nc.subscribe(`${env.prefix}svc.ledger.listWallets`, { callback: (_e, m) => void m.respond("this is not json") });
    nc.subscribe(`${env.prefix}svc.ledger.getWallet`, {
      callback: (_e, m) => void m.respond(JSON.stringify({ ok: false, error: { code: "some_unknown_code", message: "secret internals: /etc/passwd" } })),
    });
    await nc.flush();
    const t = await call(url(), "GET", "/v1/participants", { key });
    expect(t.status).toBe(504);
    expect(t.body.error_code).toBe("service_timeout");
    for (const path of ["/v1/wallets", "/v1/wallets/00000000-0000-0000-0000-000000000000"]) {
      const e = await call(url(), "GET", path, { key });
      expect(e.status, path).toBe(500);
      expect(e.body.error_code).toBe("internal_error");
      expect(String(e.body.error)).toContain(String(e.body.request_id));
      expect(String(e.body.error)).not.toContain("passwd");
      expectEnvelope(e);
    }
    await nc.close();
  });

  it("health-check answers 200 with degraded status when services are down", async () => {
    const r = await call(url(), "GET", "/v1/health-check");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { status: "degraded", version: "2026-03-01" } });
    expect((r.body.data as { services: Record<string, string> }).services.ledger).toBe("down");
  });
});

describe("health, OpenAPI and docs", () => {
  it("GET and POST /v1/health-check need no key and report every service ok", async () => {
    for (const method of ["GET", "POST"]) {
      const r = await call(stack.baseUrl, method, "/v1/health-check");
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: true, data: { status: "ok", version: "2026-03-01" } });
      const services = (r.body.data as { services: Record<string, string> }).services;
      expect(Object.keys(services).sort()).toEqual([
        "console",
        "gateway",
        "invoicing",
        "kyc",
        "ledger",
        "payments",
        "payouts",
        "receipts",
        "refunds",
        "risk",
        "tax",
        "webhooks",
      ]);
      expectEnvelope(r);
    }
  });

  it("serves an OpenAPI 3.1 document generated from the route table, and a docs page", async () => {
    const r = await call(stack.baseUrl, "GET", "/v1/openapi.json");
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe("3.1.0");
    const ops = Object.values(r.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap((m) =>
      Object.values(m).map((o) => o.operationId),
    );
    for (const route of ROUTES) expect(ops).toContain(route.operation);
    expect(r.body).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument("/"))));
    const docs = await fetch(`${stack.baseUrl}/v1/docs`);
    const html = await docs.text();
    expect(docs.headers.get("content-type")).toContain("text/html");
    expect(html).toContain("createCheckoutSession");
  });

  it("routes hosted pages on the alt listener only, as HTML with no API key", async () => {
    // An unknown receipt's page: the owning service answers through the real path, as HTML.
    const page = await fetch(`${stack.altUrl}/v1/receipts/rcpt_x/view`);
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(await page.text()).toContain("does not exist");
    const onMain = await call(stack.baseUrl, "GET", "/v1/receipts/rcpt_x/view");
    expect(onMain.status).toBe(404);
    expect(onMain.body.error_code).toBe("route_not_found");
  });

  it("serves the same /v1 paths on the alt listener", async () => {
    const r = await call(stack.altUrl, "GET", "/v1/participants");
    expect(r.status).toBe(401);
    const h = await call(stack.altUrl, "GET", "/v1/health-check");
    expect(h.status).toBe(200);
  });
});

describe("fuzzing", () => {
  it("random paths, methods, headers and bodies always get an envelope and never a 5xx other than 501", async () => {
    const methods = fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH");
    const knownPaths = ROUTES.map((r) => r.path.replace(/:([A-Za-z_]+)/g, "x"));
    const path = fc.oneof(
      fc.constantFrom(...knownPaths),
      fc.stringMatching(/^\/v1\/[a-z0-9/_.%-]{0,40}$/),
      fc.constantFrom("/", "/v1", "/v2/participants", "/v1/participants/%00", "/v1/wallets/../etc"),
    );
    const body = fc.oneof(
      fc.constant(undefined),
      fc.json().map((j) => ({ raw: j, ct: "application/json" })),
      fc.string().map((s) => ({ raw: s, ct: "application/json" })),
      fc.string().map((s) => ({ raw: s, ct: "text/plain" })),
      fc.object().map((o) => ({ raw: JSON.stringify(o), ct: "application/json" })),
    );
    const keyChoice = fc.constantFrom(undefined, stack.testKey, "slk_test_garbage", "");
    await fc.assert(
      fc.asyncProperty(methods, path, body, keyChoice, fc.boolean(), async (method, p, b, key, pinVersion) => {
        const headers: Record<string, string> = {};
        if (pinVersion) headers["service-version"] = "2026-03-01";
        if (b && method !== "GET") headers["content-type"] = b.ct;
        const r = await call(stack.baseUrl, method, p, { key, headers, ...(b && method !== "GET" ? { rawBody: b.raw } : {}) });
        expect(r.body.__raw, `${method} ${p}`).toBeUndefined();
        expect(r.status === 501 || r.status < 500, `${method} ${p} → ${r.status} ${JSON.stringify(r.body)}`).toBe(true);
        expectEnvelope(r);
      }),
      { numRuns: 300 },
    );
  });
});
