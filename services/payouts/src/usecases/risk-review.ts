/**
 * A payout risk held for review, moved on by the operator's decision (`risk.decided`, from `admin risk
 * approve|deny`): approved → posting, then the usual ledger post and settle (drivePayout; the reconciler finishes
 * it after a crash); denied → failed with reason `risk_denied` and `payout.failed`, nothing ever posted. Each
 * step changes the row only from the state it expects, so a decision delivered twice moves the payout once.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { wakeOutboxRelay } from "@treasury/service-kit";
import type { PayoutRow } from "../domain/records.ts";
import type { PayoutsDeps } from "./deps.ts";
import { payoutFailedEvent } from "./present.ts";
import { drivePayout } from "./request-payout.ts";

export interface RiskDecision {
  evaluationId: string;
  operation: string;
  decision: "approved" | "denied";
}

/** The payout the decision moved (undefined: none was under review for it). */
export async function applyRiskDecision(deps: PayoutsDeps, tenant: Tenant, d: RiskDecision): Promise<PayoutRow | undefined> {
  if (d.operation !== "payout") return undefined;
  const held = await deps.payouts.findUnderReview(tenant, d.evaluationId);
  if (held === undefined) return undefined;
  if (d.decision === "denied") {
    const failed = await deps.payouts.failUnposted(held.id, "under_review", "risk_denied", payoutFailedEvent);
    if (failed !== undefined) wakeOutboxRelay("payouts");
    return failed;
  }
  const released = await deps.payouts.releaseReview(held.id);
  if (released === undefined) return undefined;
  try {
    return await drivePayout(deps, released);
  } catch (e) {
    // A ledger refusal failed the payout (drivePayout); an unknown outcome is the reconciler's to finish.
    if (e instanceof DomainError) return deps.payouts.findById(released.id);
    throw e;
  }
}
