// Proves refunds and refund requests end to end through the gateway, with every service a real part: the
// typical buyer-refund flow (request → approve → refund executed → signed webhooks of each event at a real
// receiver), direct refunds with replays, the shortfall policy set with the admin CLI, an approve/cancel race
// over HTTP, scopes, and bad input on every field answered with the error envelope while nothing moves.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { waitFor } from "@treasury/testing";
import { admin as adminOf } from "./admin-run.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

let s: Stack;
let server: http.Server;
let secret = "";
const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments", "refunds", "webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  // Bad-input checks spend treasury-write tokens too; capacity is not what this file tests.
  const lifted = { capacity: 1e9, refill_per_sec: 1e9 };
  await s.env
    .adminSql`update gateway.orgs set rate_limits = ${s.env.adminSql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${s.orgId}`;
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const hook = await api("POST", "/v1/webhooks", { action: "create", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` });
  expect(hook.status).toBe(201);
  secret = String((hook.body["data"] as Record<string, unknown>)["secret"]);
}, 60_000);
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await s?.stop();
});

type Body = Record<string, unknown>;
const api = (method: string, path: string, body?: unknown, key?: string) =>
  call(s.baseUrl, method, path, { key: key ?? s.testKey, ...(body === undefined ? {} : { body }) });

let seq = 0;
/** A participant and a completed sandbox checkout of `amount` (creator share `percent`): its sale reference. */
async function checkoutSale(amount: number, percent: number): Promise<{ saleReference: string; creator: string }> {
  const creator = `refund_e2e_${++seq}_${Date.now().toString(36)}`;
  expect((await api("POST", "/v1/participants", { participant_id: creator, default_split_percent: percent })).status).toBe(201);
  const cs = (await api("POST", "/v1/checkout-sessions", { participant_id: creator, amount })).body["checkout_session"] as Body;
  const done = await api("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, {});
  expect(done.status).toBe(200);
  return { saleReference: String((done.body["checkout_session"] as Body)["sale_reference"]), creator };
}

async function balance(creator: string): Promise<number> {
  return Number(((await api("GET", `/v1/participants/${creator}`)).body["participant"] as Body)["ledger_balance_cents"]);
}

async function moved(): Promise<{ refunds: number; requests: number; ledger: number }> {
  const [r] = await s.env.adminSql<{ refunds: string; requests: string; ledger: string }[]>`
    select (select count(*) from refunds.refunds)::text as refunds, (select count(*) from refunds.refund_requests)::text as requests,
           (select count(*) from ledger.transactions where kind = 'refund')::text as ledger`;
  return { refunds: Number(r?.refunds), requests: Number(r?.requests), ledger: Number(r?.ledger) };
}

/** The webhook deliveries received so far of `type`, verified with the endpoint's secret. */
function deliveries(type: string): Body[] {
  const wh = new Webhook(secret);
  return received
    .filter((d) => d.headers["x-webhook-event"] === type)
    .map(
      (d) =>
        wh.verify(d.body, {
          "webhook-id": String(d.headers["webhook-id"]),
          "webhook-timestamp": String(d.headers["webhook-timestamp"]),
          "webhook-signature": String(d.headers["webhook-signature"]),
        }) as Body,
    );
}

describe("the buyer refund flow", () => {
  it("refund request → approve → refund executed → webhooks of each event", async () => {
    // Proves the spec's typical flow step 8 through the gateway, the money moved once, and the events a webhook receiver sees.
    const { saleReference, creator } = await checkoutSale(8_000, 75);
    expect(await balance(creator)).toBe(6_000);
    const created = await api("POST", "/v1/refund-requests", {
      sale_reference: saleReference,
      customer_id: "buyer_42",
      customer_email: "buyer@example.com",
      reason: "wrong size",
      amount: 2_000,
      idempotency_key: "flow-rr-1",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      success: true,
      refund_request: { status: "created", sale_reference: saleReference, amount_cents: 2_000 },
      refund: null,
    });
    const rr = created.body["refund_request"] as Body;
    const id = String(rr["id"]);
    expect((await api("GET", `/v1/refund-requests/${id}`)).body).toMatchObject({ success: true, refund_request: { id, status: "created" } });

    const approved = await api("POST", `/v1/refund-requests/${id}/approve`, { reviewed_by_actor: "support@shop" });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      success: true,
      refund_request: { id, status: "completed", reviewed_by_actor: "support@shop" },
      refund: {
        status: "completed",
        refunded_amount_cents: 2_000,
        refunded_amount: 2_000,
        sale_reference: saleReference,
        refund_request_id: id,
        breakdown: { from_creator_cents: 1_500, from_platform_cents: 500 },
      },
    });
    const refund = approved.body["refund"] as Body;
    expect(await balance(creator)).toBe(4_500);
    expect((await api("GET", `/v1/refunds?sale_reference=${encodeURIComponent(saleReference)}`)).body).toMatchObject({
      success: true,
      total: 1,
      count: 1,
      refunds: [{ id: refund["id"] }],
    });
    expect((await api("GET", `/v1/refunds/${String(refund["id"])}`)).body["refund"]).toEqual(refund);

    await waitFor(
      () =>
        ["refund_request.created", "refund.created", "sale.refunded", "refund_request.completed"].every((t) =>
          deliveries(t).some((d) => (d["data"] as Body)["sale_reference"] === saleReference),
        ),
      { timeoutMs: 20_000 },
    );
    const saleRefunded = deliveries("sale.refunded").find((d) => (d["data"] as Body)["sale_reference"] === saleReference);
    expect(saleRefunded).toMatchObject({
      type: "sale.refunded",
      livemode: false,
      mode: "sandbox",
      data: { refund_id: refund["id"], amount_cents: 2_000, remaining_amount_cents: 6_000, is_full_refund: false },
    });
    expect(deliveries("refund.created").find((d) => (d["data"] as Body)["id"] === refund["id"])?.["data"]).toEqual(refund);
    expect(deliveries("refund_request.completed").find((d) => (d["data"] as Body)["id"] === id)?.["data"]).toMatchObject({
      status: "completed",
      refund: { id: refund["id"] },
    });

    // A rejected request emits its event; an illegal move afterwards is 409 naming the state.
    const other = String(((await api("POST", "/v1/refund-requests", { sale_reference: saleReference, reason: "again" })).body["refund_request"] as Body)["id"]);
    expect((await api("POST", `/v1/refund-requests/${other}/reject`, { reason: "already refunded" })).body).toMatchObject({
      refund_request: { status: "rejected", rejection_reason: "already refunded" },
    });
    const illegal = await api("POST", `/v1/refund-requests/${other}/approve`, {});
    expect(illegal.status).toBe(409);
    expect(illegal.body).toMatchObject({ success: false, error_code: "invalid_state_transition", state: "rejected", refund_request: { id: other } });
    await waitFor(() => deliveries("refund_request.rejected").some((d) => (d["data"] as Body)["id"] === other), { timeoutMs: 20_000 });
  }, 60_000);

  it("approve and cancel racing over HTTP: exactly one wins", async () => {
    // Proves the race through the gateway: one 200 and one 409 invalid_state_transition per request.
    const { saleReference } = await checkoutSale(5_000, 50);
    for (let i = 0; i < 3; i++) {
      const id = String(((await api("POST", "/v1/refund-requests", { sale_reference: saleReference, amount: 100 })).body["refund_request"] as Body)["id"]);
      const [a, c] = await Promise.all([api("POST", `/v1/refund-requests/${id}/approve`, {}), api("POST", `/v1/refund-requests/${id}/cancel`, {})]);
      expect([a.status, c.status].sort()).toEqual([200, 409]);
      expect((a.status === 409 ? a : c).body["error_code"]).toBe("invalid_state_transition");
    }
  }, 60_000);
});

describe("direct refunds", () => {
  it("201, a replay 200 with idempotent: true, another body under the key 409 duplicate_refund_reference with the refund", async () => {
    // Proves the envelope of each answer and that the replay moved nothing.
    const { saleReference, creator } = await checkoutSale(4_000, 50);
    const body = {
      original_sale_reference: saleReference,
      reason: "duplicate order",
      amount: 1_000,
      external_refund_id: "ext-77",
      idempotency_key: "direct-1",
    };
    const first = await api("POST", "/v1/refunds", body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      success: true,
      refund: { status: "completed", refunded_amount_cents: 1_000, external_refund_id: "ext-77", currency: "USD" },
    });
    const replay = await api("POST", "/v1/refunds", body);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ success: true, idempotent: true, refund: first.body["refund"] });
    const dup = await api("POST", "/v1/refunds", { ...body, amount: 900 });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({
      success: false,
      error_code: "duplicate_refund_reference",
      refund: first.body["refund"],
      existing_refund_id: (first.body["refund"] as Body)["id"],
    });
    expect(await balance(creator)).toBe(1_500);
    const over = await api("POST", "/v1/refunds", { sale_reference: saleReference, reason: "too much", amount: 3_001 });
    expect([over.status, over.body["error_code"], over.body["remaining_amount"]]).toEqual([409, "refund_amount_exceeds_remaining", 3_000]);
    const missing = await api("POST", "/v1/refunds", { sale_reference: "checkout:no-such", reason: "x" });
    expect([missing.status, missing.body["error_code"]]).toEqual([404, "original_sale_not_found"]);
    expect((await api("GET", "/v1/refunds/re_doesnotexist")).status).toBe(404);
    // A live key sees none of the sandbox refunds.
    expect((await api("GET", `/v1/refunds/${String((first.body["refund"] as Body)["id"])}`, undefined, s.liveKey)).body["error_code"]).toBe("refund_not_found");
  });

  it("the admin CLI's refuse policy makes an uncovered refund 422 insufficient_balance; receivable books it", async () => {
    // Proves `refunds set-policy` end to end: the org setting reaches the ledger's request, per environment.
    const { saleReference, creator } = await checkoutSale(1_000, 100);
    const payout = `spender_${Date.now().toString(36)}`;
    expect((await api("POST", "/v1/participants", { participant_id: payout })).status).toBe(201);
    expect(
      (await api("POST", "/v1/transfers", { from_participant_id: creator, to_participant_id: payout, amount: 1_000, reference_id: `drain-${payout}` })).status,
    ).toBe(201);
    const admin = async (...args: string[]): Promise<Body> => {
      const r = await adminOf(s.env, ...args);
      if (r.code !== 0) throw new Error(JSON.stringify(r.err));
      return r.out;
    };
    expect(await admin("refunds", "get-policy", "--org", s.orgId, "--env", "test")).toEqual({
      org_id: s.orgId,
      environment: "test",
      shortfall_policy: "receivable",
    });
    expect(await admin("refunds", "set-policy", "--org", s.orgId, "--env", "test", "--shortfall", "refuse")).toEqual({
      org_id: s.orgId,
      environment: "test",
      shortfall_policy: "refuse",
    });
    const refused = await api("POST", "/v1/refunds", { sale_reference: saleReference, reason: "creator spent it", idempotency_key: "policy-1" });
    expect([refused.status, refused.body["error_code"]]).toEqual([422, "insufficient_balance"]);
    expect(refused.body["refund"]).toMatchObject({ status: "failed", shortfall_policy: "refuse" });
    expect(await admin("refunds", "set-policy", "--org", s.orgId, "--env", "test", "--shortfall", "receivable")).toMatchObject({
      shortfall_policy: "receivable",
    });
    const booked = await api("POST", "/v1/refunds", { sale_reference: saleReference, reason: "creator spent it", idempotency_key: "policy-2" });
    expect(booked.status).toBe(201);
    expect(booked.body["refund"]).toMatchObject({ status: "completed", shortfall_policy: "receivable", breakdown: { creator_receivable_cents: 1_000 } });
    await expect(admin("refunds", "set-policy", "--org", s.orgId, "--env", "test", "--shortfall", "sometimes")).rejects.toThrow();
  }, 60_000);
});

describe("scopes and bad input", () => {
  it("a key without the payments scope is refused before anything runs", async () => {
    // Proves fail-closed scopes on every refund write, and read on the lists.
    const { api_key: readOnly } = await s.key({ scopes: ["read"] });
    for (const [path, body] of [
      ["/v1/refunds", { sale_reference: "x", reason: "r" }],
      ["/v1/refund-requests", { sale_reference: "x" }],
      ["/v1/refund-requests/rr_x/approve", {}],
      ["/v1/refund-requests/rr_x/cancel", {}],
    ] as const) {
      const r = await api("POST", path, body, readOnly);
      expect([r.status, r.body["error_code"]]).toEqual([403, "insufficient_scope"]);
    }
    expect((await api("GET", "/v1/refunds", undefined, readOnly)).status).toBe(200);
    expect((await api("GET", "/v1/refund-requests", undefined, readOnly)).status).toBe(200);
  });

  it("bad input on every field answers the error envelope with a precise code, and nothing moves", async () => {
    // Proves 400/404 envelopes (never a 5xx) for every field of every refund operation, with no row and no ledger movement.
    const { saleReference } = await checkoutSale(2_000, 50);
    const rr = String(((await api("POST", "/v1/refund-requests", { sale_reference: saleReference })).body["refund_request"] as Body)["id"]);
    const before = await moved();
    const refundBodies: Body[] = [
      {},
      { reason: "no sale" },
      { original_sale_reference: "", reason: "r" },
      { original_sale_reference: 7, reason: "r" },
      { original_sale_reference: "x".repeat(256), reason: "r" },
      { sale_reference: saleReference, original_sale_reference: "other", reason: "r" },
      { sale_reference: saleReference },
      { sale_reference: saleReference, reason: "" },
      { sale_reference: saleReference, reason: 5 },
      { sale_reference: saleReference, reason: "x".repeat(1001) },
      { sale_reference: saleReference, reason: "r", amount: 0 },
      { sale_reference: saleReference, reason: "r", amount: -5 },
      { sale_reference: saleReference, reason: "r", amount: 10.5 },
      { sale_reference: saleReference, reason: "r", amount: "100" },
      { sale_reference: saleReference, reason: "r", refund_from: "buyer" },
      { sale_reference: saleReference, reason: "r", external_refund_id: "" },
      { sale_reference: saleReference, reason: "r", external_refund_id: 9 },
      { sale_reference: saleReference, reason: "r", idempotency_key: "" },
      { sale_reference: saleReference, reason: "r", idempotency_key: "k".repeat(256) },
      { sale_reference: saleReference, reason: "r", metadata: "m" },
      { sale_reference: saleReference, reason: "r", metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
    ];
    for (const body of refundBodies) {
      const r = await api("POST", "/v1/refunds", body);
      expect([r.status, r.body["success"], r.body["error_code"]], JSON.stringify(body).slice(0, 80)).toEqual([400, false, "validation_error"]);
      expect(r.body["details"]).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.any(String), message: expect.any(String) })]));
    }
    const tooLarge = await api("POST", "/v1/refunds", { sale_reference: saleReference, reason: "r", amount: 100_000_000_001 });
    expect([tooLarge.status, tooLarge.body["error_code"]]).toEqual([400, "amount_too_large"]);
    const requestBodies: Body[] = [
      {},
      { sale_reference: "" },
      { sale_reference: saleReference, customer_id: "" },
      { sale_reference: saleReference, customer_email: "nope" },
      { sale_reference: saleReference, amount: 0 },
      { sale_reference: saleReference, reason: "x".repeat(1001) },
      { sale_reference: saleReference, refund_from: "all" },
      { sale_reference: saleReference, idempotency_key: 3 },
      { sale_reference: saleReference, metadata: [1] },
    ];
    for (const body of requestBodies) {
      const r = await api("POST", "/v1/refund-requests", body);
      expect([r.status, r.body["error_code"]], JSON.stringify(body)).toEqual([400, "validation_error"]);
    }
    for (const action of ["approve", "reject", "cancel"]) {
      for (const body of [{ reason: 1 }, { reviewed_by_actor: "a".repeat(256) }, { metadata: "m" }]) {
        const r = await api("POST", `/v1/refund-requests/${rr}/${action}`, body);
        expect([r.status, r.body["error_code"]]).toEqual([400, "validation_error"]);
      }
      const unknown = await api("POST", `/v1/refund-requests/rr_unknown/${action}`, {});
      expect([unknown.status, unknown.body["error_code"]]).toEqual([404, "refund_request_not_found"]);
    }
    const malformed = await call(s.baseUrl, "POST", "/v1/refunds", { key: s.testKey, rawBody: "{not json", headers: { "content-type": "application/json" } });
    expect([malformed.status, malformed.body["error_code"]]).toEqual([400, "invalid_json"]);
    expect((await api("GET", "/v1/refunds?limit=ten")).body["error_code"]).toBe("validation_error");
    for (const q of ["limit=0", "limit=101", "offset=-1"]) {
      expect((await api("GET", `/v1/refunds?${q}`)).body["error_code"]).toBe("invalid_limit");
      expect((await api("GET", `/v1/refund-requests?${q}`)).body["error_code"]).toBe("invalid_limit");
    }
    expect((await api("GET", "/v1/refund-requests?status=done")).body["error_code"]).toBe("validation_error");
    expect((await api("GET", "/v1/refunds/not-an-id")).body["error_code"]).toBe("refund_not_found");
    expect((await api("GET", "/v1/refund-requests/not-an-id")).body["error_code"]).toBe("refund_request_not_found");
    expect(await moved()).toEqual(before);
    expect(((await api("GET", `/v1/refund-requests/${rr}`)).body["refund_request"] as Body)["status"]).toBe("created");
  }, 60_000);
});
