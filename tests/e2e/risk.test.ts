// Risk through the gateway: fraud policies created, listed and deleted, bad configs answered 400 naming the field,
// evaluations on demand (a hard hit denies, a soft one reviews, idempotent on the key; payout_ratio and
// refund_rate on the real ledger's sales), a review decided with the operator CLI whose risk.review_required and
// risk.decided reach a webhook endpoint, the risk scope checked before anything runs, and each org and
// environment seeing only its own policies and evaluations.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { admin } from "./admin-run.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

let s: Stack;
let riskKey: string;
let receiver: http.Server;
const deliveries: { type: string; data: Record<string, unknown> }[] = [];

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "refunds", "webhooks", "risk"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  riskKey = (await s.key({ scopes: ["risk"] })).api_key;
  receiver = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      deliveries.push(JSON.parse(body) as { type: string; data: Record<string, unknown> });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await s?.stop();
});

const api = (method: string, path: string, key: string, body?: unknown) => call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

async function newTenantKeys(): Promise<{ sandbox: string; live: string }> {
  const { org_id } = await createOrg(s.env.adminSql, { name: `Risk org ${Date.now().toString(36)}` });
  return { sandbox: (await s.key({ orgId: org_id })).api_key, live: (await s.key({ orgId: org_id, environment: "live" })).api_key };
}

describe("fraud policies", () => {
  it("creates, lists and deletes a policy; a deleted one answers 404", async () => {
    const { sandbox: key } = await newTenantKeys();
    const created = await api("POST", "/v1/fraud/policies", key, {
      policy_type: "velocity",
      config: { subject: "buyer", max_count: 3, window_seconds: 600 },
      severity: "soft",
      priority: 5,
      applies_to: ["checkout", "evaluation"],
    });
    expect(created.status).toBe(201);
    const policy = created.body["policy"] as Record<string, unknown>;
    expect(policy).toMatchObject({
      id: expect.stringMatching(/^fpol_/),
      policy_type: "velocity",
      config: { subject: "buyer", max_count: 3, window_seconds: 600 },
      severity: "soft",
      priority: 5,
      applies_to: ["checkout", "evaluation"],
      enabled: true,
      created_at: expect.any(String),
    });
    const listed = await api("GET", "/v1/fraud/policies", key);
    expect(listed.body).toMatchObject({ success: true, total: 1, policies: [{ id: policy["id"] }] });
    const deleted = await api("DELETE", `/v1/fraud/policies/${String(policy["id"])}`, key);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ deleted: true, policy: { id: policy["id"] } });
    expect((await api("GET", "/v1/fraud/policies", key)).body["total"]).toBe(0);
    const again = await api("DELETE", `/v1/fraud/policies/${String(policy["id"])}`, key);
    expect([again.status, again.body["error_code"]]).toEqual([404, "policy_not_found"]);
  });

  it.each([
    [{ policy_type: "amount_limit", config: { max_amount_cents: 0 } }, "config.max_amount_cents"],
    [{ policy_type: "velocity", config: { subject: "device", max_count: 1, window_seconds: 60 } }, "config.subject"],
    [{ policy_type: "velocity", config: { subject: "ip", max_count: 1, window_seconds: 99_999_999 } }, "config.window_seconds"],
    [{ policy_type: "new_bank_account", config: { cooldown_hours: "24" } }, "config.cooldown_hours"],
    [{ policy_type: "payout_ratio", config: { max_percent_of_30d_sales: 12.345 } }, "config.max_percent_of_30d_sales"],
    [{ policy_type: "refund_rate", config: { max_percent: 5 } }, "config.window_days"],
    [{ policy_type: "budget_cap", config: { category: "ads", period: "week", max_amount_cents: 100 } }, "config.period"],
    [{ policy_type: "projection_guard", config: { horizon_days: 30, extra: 1 } }, "config"],
    [{ policy_type: "amount_limit", config: { max_amount_cents: 5 }, severity: "medium" }, "severity"],
    [{ policy_type: "amount_limit", config: { max_amount_cents: 5 }, applies_to: ["mint"] }, "applies_to.0"],
    [{ policy_type: "mystery", config: {} }, "policy_type"],
  ])("answers 400 validation_error naming the field for %j", async (body, field) => {
    const r = await api("POST", "/v1/fraud/policies", riskKey, body);
    expect(r.status).toBe(400);
    expect(r.body["error_code"]).toBe("validation_error");
    expect((r.body["details"] as { path: string }[]).map((d) => d.path)).toContain(field);
  });
});

describe("evaluations on demand", () => {
  it("denies on a hard hit, reviews on a soft one, allows otherwise, and replays a key", async () => {
    const { sandbox: key } = await newTenantKeys();
    expect((await api("POST", "/v1/fraud/policies", key, { policy_type: "amount_limit", config: { max_amount_cents: 10_000 } })).status).toBe(201);
    expect((await api("POST", "/v1/fraud/policies", key, { policy_type: "require_instrument", severity: "soft" })).status).toBe(201);

    const deny = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "e1", amount: 20_000, authorizing_instrument_id: "pm_1" });
    expect(deny.status).toBe(201);
    expect(deny.body["evaluation"]).toMatchObject({
      id: expect.stringMatching(/^feval_/),
      decision: "deny",
      operation: "evaluation",
      amount: 20_000,
      hits: [{ policy_type: "amount_limit", severity: "hard", policy_id: expect.stringMatching(/^fpol_/), reason: expect.any(String) }],
    });
    const review = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "e2", amount: 500, participant_id: "creator_1", operation: "payout" });
    expect(review.body["evaluation"]).toMatchObject({
      decision: "review",
      operation: "payout",
      subject: "creator_1",
      hits: [{ policy_type: "require_instrument" }],
    });
    const allow = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "e3", amount: 500, authorizing_instrument_id: "pm_1" });
    expect(allow.body["evaluation"]).toMatchObject({ decision: "allow", hits: [] });

    const replay = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "e1", amount: 20_000, authorizing_instrument_id: "pm_1" });
    expect([replay.status, replay.body["idempotent"], (replay.body["evaluation"] as { id: string }).id]).toEqual([
      200,
      true,
      (deny.body["evaluation"] as { id: string }).id,
    ]);
    const conflict = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "e1", amount: 1 });
    expect([conflict.status, conflict.body["error_code"]]).toEqual([409, "idempotency_conflict"]);

    const id = (deny.body["evaluation"] as { id: string }).id;
    const got = await api("GET", `/v1/fraud/evaluations/${id}`, key);
    expect([got.status, got.body["evaluation"]]).toEqual([200, deny.body["evaluation"]]);
    const bad = await api("POST", "/v1/fraud/evaluations", key, { amount: 5 });
    expect([bad.status, (bad.body["details"] as { path: string }[])[0]?.path]).toEqual([400, "idempotency_key"]);
  });
});

describe("policies on the ledger's figures", () => {
  it("payout_ratio and refund_rate read the participant's sales and refunds from the ledger", async () => {
    const { sandbox: key } = await newTenantKeys();
    const creator = `risk_creator_${Date.now().toString(36)}`;
    expect((await api("POST", "/v1/participants", key, { participant_id: creator, display_name: "Creator" })).status).toBe(201);
    for (const [ref, amount] of [
      ["risk_sale_1", 6_000],
      ["risk_sale_2", 4_000],
    ] as const) {
      expect((await api("POST", "/v1/record-sale", key, { reference_id: ref, creator_id: creator, amount, creator_percent: 80 })).status).toBe(201);
    }
    expect((await api("POST", "/v1/refunds", key, { sale_reference: "risk_sale_1", reason: "damaged", amount: 500 })).status).toBe(201);
    const policy = (body: Record<string, unknown>) => api("POST", "/v1/fraud/policies", key, { applies_to: ["payout", "refund"], ...body });
    expect((await policy({ policy_type: "payout_ratio", config: { max_percent_of_30d_sales: 50 } })).status).toBe(201);
    expect((await policy({ policy_type: "refund_rate", config: { max_percent: 10, window_days: 30 } })).status).toBe(201);
    const decide = async (idempotency_key: string, operation: string, amount: number) => {
      const r = await api("POST", "/v1/fraud/evaluations", key, { idempotency_key, operation, amount, participant_id: creator });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body["evaluation"] as { decision: string; hits: { policy_type: string }[] };
    };
    // Sales of 10,000 cents: a payout of half is the limit.
    expect(await decide("p1", "payout", 5_000)).toMatchObject({ decision: "allow", hits: [] });
    expect(await decide("p2", "payout", 5_001)).toMatchObject({ decision: "deny", hits: [{ policy_type: "payout_ratio" }] });
    // 500 refunded already: 500 more is 10 %, one cent more is over.
    expect(await decide("r1", "refund", 500)).toMatchObject({ decision: "allow" });
    expect(await decide("r2", "refund", 501)).toMatchObject({ decision: "deny", hits: [{ policy_type: "refund_rate" }] });
  });
});

describe("review through webhooks and the operator CLI", () => {
  it("risk.review_required and then risk.decided reach the org's webhook endpoint", async () => {
    const { sandbox: key } = await newTenantKeys();
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const endpoint = await api("POST", "/v1/webhooks", key, { action: "create", url, events: ["risk.review_required", "risk.decided"] });
    expect(endpoint.status).toBe(201);
    expect((await api("POST", "/v1/fraud/policies", key, { policy_type: "amount_limit", config: { max_amount_cents: 100 }, severity: "soft" })).status).toBe(
      201,
    );
    const e = (await api("POST", "/v1/fraud/evaluations", key, { idempotency_key: "hook", amount: 900, operation: "payout" })).body["evaluation"] as {
      id: string;
      decision: string;
    };
    expect(e.decision).toBe("review");
    const of = (type: string) => deliveries.filter((d) => d.type === type && (d.data["evaluation"] as { id: string }).id === e.id);
    await waitFor(() => of("risk.review_required").length === 1, { timeoutMs: 20_000 });
    expect(of("risk.review_required")[0]?.data).toMatchObject({ operation: "payout", key: "hook", evaluation: { decision: "review" } });

    const approved = await admin(s.env, "risk", "approve", "--id", e.id, "--reason", "known buyer", "--actor", "ops:e2e");
    expect(approved.code, JSON.stringify(approved.err)).toBe(0);
    expect(approved.out).toMatchObject({ evaluation: { id: e.id, review: { status: "approved", actor: "ops:e2e" } } });
    await waitFor(() => of("risk.decided").length === 1, { timeoutMs: 20_000 });
    expect(of("risk.decided")[0]?.data).toMatchObject({ decision: "approved", reason: "known buyer", operation: "payout", key: "hook" });
    const got = await api("GET", `/v1/fraud/evaluations/${e.id}`, key);
    expect(got.body["evaluation"]).toMatchObject({ review: { status: "approved", reason: "known buyer" } });
  });
});

describe("scope and isolation", () => {
  it("refuses every risk operation to a key without the risk scope, before anything runs", async () => {
    const readOnly = (await s.key({ scopes: ["read", "payments", "payouts", "creators", "webhooks", "accounting"] })).api_key;
    const probes: [string, string, unknown][] = [
      ["GET", "/v1/fraud/policies", undefined],
      ["POST", "/v1/fraud/policies", { policy_type: "amount_limit", config: { max_amount_cents: 1 } }],
      ["DELETE", "/v1/fraud/policies/fpol_x", undefined],
      ["POST", "/v1/fraud/evaluations", { idempotency_key: "scope", amount: 1 }],
      ["GET", "/v1/fraud/evaluations/feval_x", undefined],
      ["POST", "/v1/configure-alerts", { action: "list" }],
    ];
    for (const [method, path, body] of probes) {
      const r = await api(method, path, readOnly, body);
      expect([method, path, r.status, r.body["error_code"]]).toEqual([method, path, 403, "insufficient_scope"]);
    }
    const [row] = await s.env.adminSql<{ n: number }[]>`select (select count(*) from risk.policies) + (select count(*) from risk.evaluations) as n`;
    const before = Number(row?.n);
    await api("POST", "/v1/fraud/policies", readOnly, { policy_type: "amount_limit", config: { max_amount_cents: 1 } });
    const [after] = await s.env.adminSql<{ n: number }[]>`select (select count(*) from risk.policies) + (select count(*) from risk.evaluations) as n`;
    expect(Number(after?.n)).toBe(before);
    expect((await api("GET", "/v1/fraud/policies", riskKey)).status).toBe(200);
  });

  it("keeps policies and evaluations to their org and environment", async () => {
    const a = await newTenantKeys();
    const b = await newTenantKeys();
    const policy = (await api("POST", "/v1/fraud/policies", a.sandbox, { policy_type: "amount_limit", config: { max_amount_cents: 100 } })).body["policy"] as {
      id: string;
    };
    const evaluation = (await api("POST", "/v1/fraud/evaluations", a.sandbox, { idempotency_key: "iso", amount: 500 })).body["evaluation"] as {
      id: string;
      decision: string;
    };
    expect(evaluation.decision).toBe("deny");
    for (const other of [a.live, b.sandbox, b.live]) {
      expect((await api("GET", "/v1/fraud/policies", other)).body["total"]).toBe(0);
      expect((await api("GET", `/v1/fraud/evaluations/${evaluation.id}`, other)).status).toBe(404);
      expect((await api("DELETE", `/v1/fraud/policies/${policy.id}`, other)).status).toBe(404);
      // Another tenant's policy never applies: the same proposal is allowed there, and its key is its own.
      const there = await api("POST", "/v1/fraud/evaluations", other, { idempotency_key: "iso", amount: 500 });
      expect([there.status, (there.body["evaluation"] as { decision: string }).decision]).toEqual([201, "allow"]);
    }
    expect((await api("GET", "/v1/fraud/policies", a.sandbox)).body["total"]).toBe(1);
  });
});
