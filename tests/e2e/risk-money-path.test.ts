// Risk in the money path, through the gateway: a hard amount limit refuses every kind of movement with 422
// risk_denied (and its evaluation) and nothing moves; a velocity limit holds exactly under 20 parallel checkouts; a
// payout to a bank account changed inside its cooldown waits under review and an operator's approval pays it once
// (a denial fails it, nothing moved); with risk down, checkouts go ahead (fail open) and payouts are refused with a
// retryable 503 (fail closed), unless the org chose otherwise, and each such decision is recorded.
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { admin } from "./admin-run.ts";
import { BANK_ACCOUNT } from "./route-samples.ts";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; headers: Headers; body: Body }>;

let s: Stack;

beforeAll(async () => {
  // A deadline long enough for this shared machine: an answer that came late would count as an outage (fail mode).
  const deadline = { RISK_DEADLINE_MS: "15000" };
  s = await startStack({
    services: ["ledger", "payments", "payouts", "refunds", "risk"],
    serviceEnv: { ledger: deadline, payments: deadline, refunds: deadline, payouts: { ...deadline, PII_KEYS: generateKeyRingEntry("riskpath1") } },
  });
});
afterAll(async () => {
  await s?.stop();
});

/** A fresh org's sandbox: its id and a key with every scope. */
async function tenant(): Promise<{ orgId: string; api: Api }> {
  const { org_id } = await createOrg(s.env.adminSql, { name: `Risk path ${Date.now().toString(36)}` });
  const key = (await s.key({ orgId: org_id })).api_key;
  return { orgId: org_id, api: (method, path, body) => call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) }) };
}

async function ok(api: Api, method: string, path: string, body: unknown, status = 201): Promise<Body> {
  const r = await api(method, path, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

async function policy(api: Api, body: Body): Promise<void> {
  await ok(api, "POST", "/v1/fraud/policies", { severity: "hard", priority: 1, ...body });
}

/** A participant with `amount` of its own recorded sales available to pay out. */
async function fundedCreator(api: Api, id: string, amount: number): Promise<void> {
  await ok(api, "POST", "/v1/participants", { participant_id: id, display_name: id, default_split_percent: 80 });
  await ok(api, "POST", "/v1/record-sale", { reference_id: `${id}_sale`, creator_id: id, amount, creator_percent: 100 });
}

async function balanceOf(api: Api, id: string): Promise<number> {
  return Number(((await ok(api, "GET", `/v1/participants/${id}`, undefined, 200))["participant"] as Body)["ledger_balance_cents"]);
}

function expectDenied(r: { status: number; body: Body }): string {
  expect([r.status, r.body["error_code"]], JSON.stringify(r.body)).toEqual([422, "risk_denied"]);
  expect(r.body["evaluation_id"]).toMatch(/^feval_/);
  return String(r.body["evaluation_id"]);
}

describe("a hard amount limit", () => {
  it("refuses a checkout, a shared spend, a payout, a refund and a transfer above it, and nothing moves", async () => {
    const { api } = await tenant();
    await fundedCreator(api, "amt_creator", 100_000);
    await fundedCreator(api, "amt_other", 1_000);
    await policy(api, {
      policy_type: "amount_limit",
      config: { max_amount_cents: 1_000 },
      applies_to: ["checkout", "payout", "refund", "transfer", "withdrawal"],
    });

    const checkout = await api("POST", "/v1/checkout-sessions", { participant_id: "amt_creator", amount: 5_000, payment_method_id: "pm_card_visa" });
    const evaluationId = expectDenied(checkout);
    const evaluation = (await ok(api, "GET", `/v1/fraud/evaluations/${evaluationId}`, undefined, 200))["evaluation"] as Body;
    expect(evaluation).toMatchObject({ decision: "deny", operation: "checkout", amount: 5_000, hits: [{ policy_type: "amount_limit", severity: "hard" }] });
    expectDenied(await api("POST", "/v1/payouts", { participant_id: "amt_creator", amount: 5_000, reference_id: "amt_payout" }));
    expectDenied(await api("POST", "/v1/refunds", { sale_reference: "amt_creator_sale", amount: 5_000, reason: "test" }));
    expectDenied(
      await api("POST", "/v1/transfers", { from_participant_id: "amt_creator", to_participant_id: "amt_other", amount: 5_000, reference_id: "amt_transfer" }),
    );

    // Nothing moved: the balances, the payouts, the refunds are as before.
    expect(await balanceOf(api, "amt_creator")).toBe(100_000);
    expect(await balanceOf(api, "amt_other")).toBe(1_000);
    expect((await ok(api, "GET", "/v1/payouts?participant_id=amt_creator", undefined, 200))["payouts"]).toEqual([]);
    expect((await ok(api, "GET", "/v1/refunds", undefined, 200))["refunds"]).toEqual([]);
    // Under the limit everything goes ahead.
    await ok(api, "POST", "/v1/payouts", { participant_id: "amt_creator", amount: 900, reference_id: "amt_small_payout" });
    expect(await balanceOf(api, "amt_creator")).toBe(99_100);
  });
});

describe("a velocity limit", () => {
  it("allows exactly max_count of 20 parallel checkouts of one creator", async () => {
    const { api, orgId } = await tenant();
    await ok(api, "POST", "/v1/participants", { participant_id: "vel_creator", display_name: "Velocity", default_split_percent: 80 });
    await policy(api, { policy_type: "velocity", config: { subject: "participant", max_count: 5, window_seconds: 3_600 }, applies_to: ["checkout"] });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        api("POST", "/v1/checkout-sessions", { participant_id: "vel_creator", amount: 1_000, payment_method_id: "pm_card_visa" }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((x) => x === 201)).toHaveLength(5);
    expect(answers.filter((a) => a.status === 422 && a.body["error_code"] === "risk_denied")).toHaveLength(15);
    // Five sales of 1,000 at 80 %: exactly five moved money, each evaluated (none let through by a fail mode).
    expect(await balanceOf(api, "vel_creator")).toBe(4_000);
    expect(await s.env.adminSql`select 1 from payments.risk_fail_safes where org_id = ${orgId}`).toHaveLength(0);
  });
});

describe("a payout under review", () => {
  it("waits with the money in the wallet; an approval pays it once, a denial fails it", async () => {
    const { api } = await tenant();
    await fundedCreator(api, "rev_creator", 10_000);
    await ok(api, "PUT", "/v1/participants/rev_creator/bank-account", BANK_ACCOUNT);
    await policy(api, { policy_type: "new_bank_account", config: { cooldown_hours: 24 }, severity: "soft", applies_to: ["payout"] });

    const held = (await ok(api, "POST", "/v1/payouts", { participant_id: "rev_creator", amount: 3_000, reference_id: "rev_1" }))["payout"] as Body;
    expect(held).toMatchObject({ status: "under_review", risk_evaluation_id: expect.stringMatching(/^feval_/), transaction_id: null });
    const denied = (await ok(api, "POST", "/v1/payouts", { participant_id: "rev_creator", amount: 2_000, reference_id: "rev_2" }))["payout"] as Body;
    expect(denied["status"]).toBe("under_review");
    expect(await balanceOf(api, "rev_creator")).toBe(10_000);

    const approve = await admin(s.env, "risk", "approve", "--id", String(held["risk_evaluation_id"]), "--reason", "known creator");
    expect(approve.code, JSON.stringify(approve.err)).toBe(0);
    const deny = await admin(s.env, "risk", "deny", "--id", String(denied["risk_evaluation_id"]), "--reason", "account takeover suspected");
    expect(deny.code, JSON.stringify(deny.err)).toBe(0);

    const payout = async (id: unknown) => (await ok(api, "GET", `/v1/payouts/${String(id)}`, undefined, 200))["payout"] as Body;
    await waitFor(async () => (await payout(held["id"]))["status"] === "paid" && (await payout(denied["id"]))["status"] === "failed", { timeoutMs: 20_000 });
    expect(await payout(denied["id"])).toMatchObject({ failure_reason: "risk_denied", transaction_id: null });
    expect(await balanceOf(api, "rev_creator")).toBe(7_000);
    // A decision already made is not made again: the payout stays paid once.
    const again = await admin(s.env, "risk", "approve", "--id", String(denied["risk_evaluation_id"]), "--reason", "second thoughts");
    expect(again.code).not.toBe(0);
    expect(await balanceOf(api, "rev_creator")).toBe(7_000);
    expect((await ok(api, "GET", "/v1/payouts?participant_id=rev_creator", undefined, 200))["payouts"]).toHaveLength(2);
  });
});

describe("with risk down", () => {
  it("checkouts fail open, payouts fail closed unless the org chose open, and each is recorded", async () => {
    const closed = await tenant();
    const open = await tenant();
    for (const t of [closed, open]) await fundedCreator(t.api, "down_creator", 10_000);
    const set = await admin(
      s.env,
      "risk",
      "set-fail-mode",
      "--org",
      open.orgId,
      "--env",
      "test",
      "--operation",
      "payout",
      "--mode",
      "open",
      "--reason",
      "test org",
    );
    expect(set.code, JSON.stringify(set.err)).toBe(0);
    expect(set.out).toMatchObject({ fail_modes: { payout: "open", checkout: "open", transfer: "closed" } });
    // The payouts service learns an org's modes from an evaluation's answer.
    await ok(open.api, "POST", "/v1/payouts", { participant_id: "down_creator", amount: 100, reference_id: "down_learn" });

    await s.services["risk"]?.stop();
    delete s.services["risk"];
    const checkout = await closed.api("POST", "/v1/checkout-sessions", { participant_id: "down_creator", amount: 1_000, payment_method_id: "pm_card_visa" });
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
    const refused = await closed.api("POST", "/v1/payouts", { participant_id: "down_creator", amount: 1_000, reference_id: "down_payout" });
    expect([refused.status, refused.body["error_code"]]).toEqual([503, "risk_unavailable"]);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await balanceOf(closed.api, "down_creator")).toBe(10_800);
    await ok(open.api, "POST", "/v1/payouts", { participant_id: "down_creator", amount: 1_000, reference_id: "down_payout" });
    expect(await balanceOf(open.api, "down_creator")).toBe(8_900);

    const recorded = await s.env.adminSql<{ schema: string; org_id: string; operation: string; mode: string }[]>`
      select 'payments' as schema, org_id, operation, mode from payments.risk_fail_safes where org_id in (${closed.orgId}, ${open.orgId})
      union all
      select 'payouts', org_id, operation, mode from payouts.risk_fail_safes where org_id in (${closed.orgId}, ${open.orgId})
      order by schema, mode`;
    expect(recorded).toEqual([
      { schema: "payments", org_id: closed.orgId, operation: "checkout", mode: "open" },
      { schema: "payouts", org_id: closed.orgId, operation: "payout", mode: "closed" },
      { schema: "payouts", org_id: open.orgId, operation: "payout", mode: "open" },
    ]);
  });
});
