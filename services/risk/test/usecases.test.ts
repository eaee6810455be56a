// The risk use cases on in-memory fakes: what an evaluation records, counts, emits and alerts; replays; the
// review's single decision; policy and alert configuration checks.
import { describe, expect, it } from "vitest";
import type { Proposal } from "../src/domain/rules.ts";
import { configureAlerts } from "../src/usecases/alerts.ts";
import { evaluateMovement } from "../src/usecases/evaluate.ts";
import { createPolicy, deletePolicy } from "../src/usecases/policies.ts";
import { decideReview } from "../src/usecases/review.ts";
import { fakes, type Fakes } from "./fakes.ts";
import { proposal } from "./proposal.ts";

const tenant = { orgId: "org_1", livemode: false };

const evaluate = (f: Fakes, key: string, p: Partial<Proposal> = {}, source: "api" | "internal" = "internal", hash = "h") =>
  evaluateMovement(f.deps, tenant, { source, key, requestHash: hash, proposal: proposal({ participantId: "creator_1", ...p }) });

describe("evaluateMovement", () => {
  it("without an applicable policy allows, records, and reads nothing from the ledger", async () => {
    const f = fakes();
    await createPolicy(f.deps, tenant, { policy_type: "payout_ratio", config: { max_percent_of_30d_sales: 5 }, applies_to: ["refund"] });
    const r = await evaluate(f, "payout:po_1");
    expect(r).toMatchObject({ duplicate: false, evaluation: { decision: "allow", hits: [], key: "payout:po_1" } });
    expect(f.ledgerReads).toBe(0);
    expect((await evaluate(f, "payout:po_1")).evaluation.id).toBe(r.evaluation.id);
  });

  it("counts what it allows, not what it denies, and a replay counts nothing", async () => {
    const f = fakes();
    await createPolicy(f.deps, tenant, { policy_type: "velocity", config: { subject: "participant", max_count: 1, window_seconds: 60 } });
    expect((await evaluate(f, "payout:a")).evaluation.decision).toBe("allow");
    expect((await evaluate(f, "payout:a")).duplicate).toBe(true);
    expect((await evaluate(f, "payout:b")).evaluation.decision).toBe("deny");
    expect(f.counted).toHaveLength(1);
    // The window slides: a minute later there is room again.
    f.clock.now = new Date(f.clock.now.getTime() + 60_001);
    expect((await evaluate(f, "payout:c")).evaluation.decision).toBe("allow");
  });

  it("a soft hit reviews: review pending, risk.review_required with the evaluation, operation and key, and its alerts", async () => {
    const f = fakes();
    await createPolicy(f.deps, tenant, { policy_type: "amount_limit", config: { max_amount_cents: 10 }, severity: "soft" });
    await configureAlerts(f.deps, tenant, { action: "create", alert_type: "review_required", channel: "email", recipients: ["a@example.com"] });
    await configureAlerts(f.deps, tenant, { action: "create", alert_type: "breach_risk", channel: "email", recipients: ["b@example.com"] });
    const { evaluation } = await evaluate(f, "payout:po_r");
    expect(evaluation).toMatchObject({ decision: "review", review: { status: "pending" } });
    expect(f.events).toEqual([
      { type: "risk.review_required", data: { evaluation: expect.objectContaining({ id: evaluation.id }), operation: "payout", key: "payout:po_r" } },
    ]);
    expect(f.alerts.map((a) => [a.config.alertType, a.payload.evaluation?.id])).toEqual([["review_required", evaluation.id]]);
  });

  it("refuses an API key reused with another request; the money path's retries are answered whatever they carry", async () => {
    const f = fakes();
    await evaluate(f, "k", {}, "api", "h1");
    await expect(evaluate(f, "k", {}, "api", "h2")).rejects.toMatchObject({ code: "idempotency_conflict" });
    await evaluate(f, "payout:x", {}, "internal", "h1");
    expect((await evaluate(f, "payout:x", { amount: 5 }, "internal", "h2")).duplicate).toBe(true);
  });
});

describe("decideReview", () => {
  it("decides once and emits risk.decided; an evaluation not under review cannot be decided", async () => {
    const f = fakes();
    await createPolicy(f.deps, tenant, { policy_type: "require_instrument", severity: "soft" });
    const { evaluation } = await evaluate(f, "payout:po_d");
    const decided = await decideReview(f.deps, { evaluationId: evaluation.id, decision: "denied", actor: "ops", reason: "fraud ring" });
    expect(decided.review).toMatchObject({ status: "denied", actor: "ops", reason: "fraud ring" });
    expect(f.events.at(-1)).toMatchObject({ type: "risk.decided", data: { decision: "denied", key: "payout:po_d", operation: "payout", actor: "ops" } });
    await expect(decideReview(f.deps, { evaluationId: evaluation.id, decision: "approved", actor: "ops", reason: null })).rejects.toMatchObject({
      code: "invalid_state_transition",
    });
    await expect(decideReview(f.deps, { evaluationId: "feval_x", decision: "approved", actor: "ops", reason: null })).rejects.toMatchObject({
      code: "evaluation_not_found",
    });
  });
});

describe("policies and alert configurations", () => {
  it("defaults a policy to hard, priority 100, every operation, enabled; deleting twice is not found", async () => {
    const f = fakes();
    const p = await createPolicy(f.deps, tenant, { policy_type: "amount_limit", config: { max_amount_cents: 5 } });
    expect(p).toMatchObject({
      severity: "hard",
      priority: 100,
      enabled: true,
      appliesTo: ["checkout", "payout", "refund", "transfer", "withdrawal", "evaluation"],
    });
    await deletePolicy(f.deps, tenant, p.id);
    await expect(deletePolicy(f.deps, tenant, p.id)).rejects.toMatchObject({ code: "policy_not_found" });
  });

  it("refuses a webhook to a private address unless allowed, and reports a test alert that failed", async () => {
    const f = fakes();
    const create = { action: "create", alert_type: "review_required", channel: "webhook", webhook_url: "http://10.0.0.5/hook" };
    await expect(configureAlerts(f.deps, tenant, create)).rejects.toMatchObject({ code: "validation_error", details: [{ path: "webhook_url" }] });
    await expect(configureAlerts(f.deps, tenant, { ...create, webhook_url: "https://127.0.0.1/hook" })).rejects.toMatchObject({ code: "validation_error" });
    const made = await configureAlerts(f.deps, tenant, { ...create, webhook_url: "https://alerts.example.com/hook" });
    const id = (made.body["alert_config"] as { id: string }).id;
    f.failSending = "webhook answered HTTP 500";
    await expect(configureAlerts(f.deps, tenant, { action: "test", config_id: id })).rejects.toMatchObject({ code: "alert_delivery_failed" });
    f.failSending = undefined;
    expect((await configureAlerts(f.deps, tenant, { action: "test", config_id: id })).body).toMatchObject({ delivered: true });
    expect(f.sent[0]?.payload).toMatchObject({ test: true, alert_type: "review_required", evaluation: null });
  });
});
