// A payout risk sends to review, on fakes: recorded under_review with nothing posted; an approval posts it once
// (a repeated decision changes nothing); a denial fails it with payout.failed and nothing posted; a ledger
// refusal after an approval fails it visibly; a denial from risk records nothing.
import { DomainError, tenantOf, type Tenant } from "@treasury/contracts";
import type { RiskGate } from "@treasury/service-kit";
import { describe, expect, it } from "vitest";
import { fakes } from "../../test/fakes.ts";
import { requestPayout } from "./request-payout.ts";
import { applyRiskDecision } from "./risk-review.ts";

const SANDBOX: Tenant = tenantOf({ org_id: "org_a", livemode: false });
const body = (reference_id: string, amount = 1000) => ({ amount, reference_id, participant_id: "creator_1" });
const review: RiskGate = { check: async (_t, p) => ({ decision: "review", evaluationId: `feval_${p.key}`, failedOpen: false }) };

describe("a payout under review", () => {
  it("is recorded without a post, and an approval posts it once", async () => {
    const f = fakes({ risk: review });
    f.ledger.addCreator("creator_1", 5000);
    const held = await requestPayout(f.deps, SANDBOX, body("ref_1"));
    expect(held).toMatchObject({ status: "under_review", risk_evaluation_id: "feval_payout:ref_1", transaction_id: null });
    expect(f.ledger.posts).toHaveLength(0);
    const decision = { evaluationId: "feval_payout:ref_1", operation: "payout", decision: "approved" as const };
    expect(await applyRiskDecision(f.deps, SANDBOX, decision)).toMatchObject({ status: "paid", new_balance: 4000 });
    expect(await applyRiskDecision(f.deps, SANDBOX, decision)).toBeUndefined();
    expect(f.ledger.posts).toHaveLength(1);
  });

  it("a denial fails it with payout.failed and nothing posted; another operation's decision is not the payout's", async () => {
    const f = fakes({ risk: review });
    f.ledger.addCreator("creator_1", 5000);
    const held = await requestPayout(f.deps, SANDBOX, body("ref_2"));
    expect(
      await applyRiskDecision(f.deps, SANDBOX, { evaluationId: String(held.risk_evaluation_id), operation: "refund", decision: "denied" }),
    ).toBeUndefined();
    const failed = await applyRiskDecision(f.deps, SANDBOX, { evaluationId: String(held.risk_evaluation_id), operation: "payout", decision: "denied" });
    expect(failed).toMatchObject({ status: "failed", failure_reason: "risk_denied" });
    expect(f.payouts.events.map((e) => e.type)).toEqual(["payout.failed"]);
    expect(f.ledger.posts).toHaveLength(0);
  });

  it("an approval the ledger refuses (the money left meanwhile) fails it visibly", async () => {
    const f = fakes({ risk: review });
    f.ledger.addCreator("creator_1", 5000);
    const held = await requestPayout(f.deps, SANDBOX, body("ref_3"));
    f.ledger.answer = () => new DomainError("insufficient_balance", "The wallet's available balance is below the amount");
    const after = await applyRiskDecision(f.deps, SANDBOX, { evaluationId: String(held.risk_evaluation_id), operation: "payout", decision: "approved" });
    expect(after).toMatchObject({ status: "failed", failure_reason: "insufficient_balance" });
    expect(f.payouts.events.map((e) => e.type)).toEqual(["payout.failed"]);
  });

  it("a denial by risk records nothing", async () => {
    const deny: RiskGate = {
      check: async () => {
        throw new DomainError("risk_denied", "Denied by a risk policy", { extra: { evaluation_id: "feval_x" } });
      },
    };
    const f = fakes({ risk: deny });
    f.ledger.addCreator("creator_1", 5000);
    await expect(requestPayout(f.deps, SANDBOX, body("ref_4"))).rejects.toMatchObject({ code: "risk_denied" });
    expect(f.payouts.rows.size).toBe(0);
    expect(f.ledger.posts).toHaveLength(0);
  });
});
