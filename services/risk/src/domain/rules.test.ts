// Each policy type's rule on its own, the order of hits, and how hits become a decision.
import { schemas } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { proposal } from "../../test/proposal.ts";
import { activityKey, activityNeeds, counterNeeds, periodStart } from "./counters.ts";
import { applicable, type Policy } from "./policies.ts";
import { evaluate, type CounterState, type Proposal, type RuleInputs, type SalesActivity } from "./rules.ts";

const tenant = { orgId: "org_1", livemode: false };
const NOW = new Date("2026-05-20T12:00:00Z");

function policy(policyType: string, config: unknown, extra: Partial<Policy> = {}): Policy {
  const body = schemas.CreatePolicyBody.parse({ policy_type: policyType, config });
  return {
    id: extra.id ?? `fpol_${policyType}`,
    tenant,
    policyType: body.policy_type,
    config: body.config,
    severity: "hard",
    priority: 100,
    appliesTo: [...schemas.RISK_OPERATIONS],
    enabled: true,
    description: null,
    createdAt: NOW,
    ...extra,
  } as Policy;
}

/** Runs the rules as the use case does: counters and ledger figures keyed by what the policies need. */
function run(policies: Policy[], p: Proposal, state: { counters?: Record<string, CounterState>; sales?: SalesActivity } = {}) {
  const counters = counterNeeds(policies, p, tenant, NOW);
  const activity = activityNeeds(policies, p);
  const inputs: RuleInputs = {
    now: NOW,
    counters: new Map(counters.map((c) => [c.counter, state.counters?.[c.policyId] ?? { count: 0, amount: 0 }])),
    activity: new Map(activity.map((a) => [a.key, state.sales ?? { sales_count: 0, gross_cents: 0, refunded_cents: 0 }])),
    counterOf: new Map(counters.map((c) => [c.policyId, c.counter])),
    activityOf: new Map(activity.map((a) => [a.policyId, a.key])),
  };
  return evaluate(policies, p, inputs);
}

describe("risk rules", () => {
  it("amount_limit: hits above the limit only", () => {
    const p = [policy("amount_limit", { max_amount_cents: 1_000 })];
    expect(run(p, proposal({ amount: 1_000 })).decision).toBe("allow");
    expect(run(p, proposal({ amount: 1_001 }))).toMatchObject({ decision: "deny", hits: [{ policyType: "amount_limit", severity: "hard" }] });
  });

  it("velocity: counts the subject's movements and amounts in the window; no subject, no count", () => {
    const byCount = [policy("velocity", { subject: "buyer", max_count: 5, window_seconds: 3600 })];
    expect(run(byCount, proposal({ buyerId: "b1" }), { counters: { fpol_velocity: { count: 4, amount: 0 } } }).decision).toBe("allow");
    expect(run(byCount, proposal({ buyerId: "b1" }), { counters: { fpol_velocity: { count: 5, amount: 0 } } }).decision).toBe("deny");
    expect(run(byCount, proposal(), { counters: { fpol_velocity: { count: 99, amount: 0 } } }).decision).toBe("allow");
    const byAmount = [policy("velocity", { subject: "org", max_amount_cents: 5_000, window_seconds: 60 })];
    expect(run(byAmount, proposal({ amount: 1_000 }), { counters: { fpol_velocity: { count: 1, amount: 4_000 } } }).decision).toBe("allow");
    expect(run(byAmount, proposal({ amount: 1_001 }), { counters: { fpol_velocity: { count: 1, amount: 4_000 } } }).decision).toBe("deny");
    // The counter is the policy's and the subject's, and the window ends now.
    const [need] = counterNeeds(byCount, proposal({ buyerId: "b1" }), tenant, NOW);
    expect(need).toEqual({ policyId: "fpol_velocity", counter: "fpol_velocity:b1", since: new Date(NOW.getTime() - 3_600_000) });
  });

  it("new_bank_account: hits while the account is younger than the cooldown", () => {
    const p = [policy("new_bank_account", { cooldown_hours: 48 })];
    const hoursAgo = (h: number) => new Date(NOW.getTime() - h * 3_600_000);
    expect(run(p, proposal({ bankAccountUpdatedAt: hoursAgo(47) })).decision).toBe("deny");
    expect(run(p, proposal({ bankAccountUpdatedAt: hoursAgo(48) })).decision).toBe("allow");
    expect(run(p, proposal()).decision).toBe("allow");
  });

  it("payout_ratio: the amount against the participant's sales of 30 days, in exact integers", () => {
    const p = [policy("payout_ratio", { max_percent_of_30d_sales: 50 })];
    const sales = { sales_count: 3, gross_cents: 10_000, refunded_cents: 0 };
    expect(run(p, proposal({ participantId: "c1", amount: 5_000 }), { sales }).decision).toBe("allow");
    expect(run(p, proposal({ participantId: "c1", amount: 5_001 }), { sales }).decision).toBe("deny");
    expect(run(p, proposal({ participantId: "c1", amount: 1 }), { sales: { sales_count: 0, gross_cents: 0, refunded_cents: 0 } }).decision).toBe("deny");
    expect(run(p, proposal({ amount: 1_000_000 })).decision).toBe("allow");
    expect(activityNeeds(p, proposal({ participantId: "c1" }))).toEqual([
      { policyId: "fpol_payout_ratio", key: activityKey("c1", 30), participantId: "c1", windowDays: 30 },
    ]);
  });

  it("refund_rate: refunds so far plus this refund against the window's sales", () => {
    const p = [policy("refund_rate", { max_percent: 10, window_days: 30 })];
    const sales = { sales_count: 10, gross_cents: 100_000, refunded_cents: 9_000 };
    expect(run(p, proposal({ operation: "refund", amount: 1_000 }), { sales }).decision).toBe("allow");
    expect(run(p, proposal({ operation: "refund", amount: 1_001 }), { sales }).decision).toBe("deny");
    // Another operation adds nothing to the refunds: the rate as it stands.
    expect(run(p, proposal({ operation: "payout", amount: 50_000 }), { sales }).decision).toBe("allow");
    expect(run(p, proposal({ operation: "refund", amount: 1 }), { sales: { sales_count: 0, gross_cents: 0, refunded_cents: 0 } }).decision).toBe("deny");
  });

  it("require_instrument: hits without an authorizing instrument", () => {
    const p = [policy("require_instrument", {})];
    expect(run(p, proposal()).hits[0]?.reason).toBe("no authorizing instrument");
    expect(run(p, proposal({ authorizingInstrumentId: "pm_1" })).decision).toBe("allow");
  });

  it("budget_cap: a category's spend this calendar period; other categories are not counted", () => {
    const p = [policy("budget_cap", { category: "ads", period: "quarter", max_amount_cents: 10_000 })];
    expect(run(p, proposal({ category: "ads", amount: 2_000 }), { counters: { fpol_budget_cap: { count: 3, amount: 8_000 } } }).decision).toBe("allow");
    expect(run(p, proposal({ category: "ads", amount: 2_001 }), { counters: { fpol_budget_cap: { count: 3, amount: 8_000 } } }).decision).toBe("deny");
    expect(counterNeeds(p, proposal({ category: "travel" }), tenant, NOW)).toEqual([]);
    expect(counterNeeds(p, proposal({ category: "ads" }), tenant, NOW)[0]?.since).toEqual(new Date("2026-04-01T00:00:00Z"));
    expect(periodStart("month", NOW)).toEqual(new Date("2026-05-01T00:00:00Z"));
    expect(periodStart("year", NOW)).toEqual(new Date("2026-01-01T00:00:00Z"));
  });

  it("projection_guard: the expected date within today and the horizon", () => {
    const p = [policy("projection_guard", { horizon_days: 30 })];
    expect(run(p, proposal({ expectedDate: "2026-05-20" })).decision).toBe("allow");
    expect(run(p, proposal({ expectedDate: "2026-06-19" })).decision).toBe("allow");
    expect(run(p, proposal({ expectedDate: "2026-06-20" })).decision).toBe("deny");
    expect(run(p, proposal({ expectedDate: "2026-05-19" })).decision).toBe("deny");
    expect(run(p, proposal()).decision).toBe("deny");
  });

  it("a soft hit alone is review, any hard hit denies; hits follow priority, then id", () => {
    const soft = policy("amount_limit", { max_amount_cents: 10 }, { id: "fpol_b", severity: "soft", priority: 1 });
    const hard = policy("require_instrument", {}, { id: "fpol_a", severity: "hard", priority: 2 });
    const disabled = policy("amount_limit", { max_amount_cents: 1 }, { id: "fpol_c", enabled: false });
    const checkoutOnly = policy("amount_limit", { max_amount_cents: 1 }, { id: "fpol_d", appliesTo: ["checkout"] });
    const policies = applicable([hard, soft, disabled, checkoutOnly], "payout");
    expect(policies.map((p) => p.id)).toEqual(["fpol_b", "fpol_a"]);
    expect(run([soft], proposal())).toMatchObject({ decision: "review", hits: [{ policyId: "fpol_b", severity: "soft" }] });
    expect(run(policies, proposal()).hits.map((h) => h.policyId)).toEqual(["fpol_b", "fpol_a"]);
    expect(run(policies, proposal()).decision).toBe("deny");
    expect(run(policies, proposal({ amount: 5, authorizingInstrumentId: "pm_1" })).decision).toBe("allow");
  });

  it("refuses bad configs with the field named", () => {
    const issue = (body: unknown) => schemas.CreatePolicyBody.safeParse(body).error?.issues[0]?.path.join(".");
    expect(issue({ policy_type: "amount_limit", config: { max_amount_cents: -1 } })).toBe("config.max_amount_cents");
    expect(issue({ policy_type: "velocity", config: { subject: "card", max_count: 5, window_seconds: 60 } })).toBe("config.subject");
    expect(issue({ policy_type: "velocity", config: { subject: "ip", window_seconds: 60 } })).toBe("config.max_count");
    expect(issue({ policy_type: "refund_rate", config: { max_percent: 101, window_days: 30 } })).toBe("config.max_percent");
    expect(issue({ policy_type: "budget_cap", config: { category: "ads", period: "week", max_amount_cents: 1 } })).toBe("config.period");
    expect(issue({ policy_type: "nope", config: {} })).toBe("policy_type");
  });
});
