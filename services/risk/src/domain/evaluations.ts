/** Evaluations as stored, and as the API, the internal operation and the events show them. Pure. */
import type { schemas, Tenant } from "@treasury/contracts";
import type { RiskOperation } from "./policies.ts";
import type { Hit, Proposal } from "./rules.ts";

export type EvaluationSource = "api" | "internal";
export type ReviewStatus = "pending" | "approved" | "denied";

export interface Evaluation {
  id: string;
  tenant: Tenant;
  source: EvaluationSource;
  key: string;
  requestHash: string;
  decision: schemas.RiskDecision;
  proposal: Proposal;
  hits: Hit[];
  review: { status: ReviewStatus; actor: string | null; reason: string | null; decidedAt: Date | null } | null;
  createdAt: Date;
}

export function presentEvaluation(e: Evaluation): schemas.RiskEvaluation {
  const p = e.proposal;
  return {
    id: e.id,
    decision: e.decision,
    hits: e.hits.map((h) => ({ policy_id: h.policyId, policy_type: h.policyType, severity: h.severity, reason: h.reason })),
    operation: p.operation as RiskOperation,
    key: e.key,
    amount: p.amount,
    currency: p.currency,
    subject: p.participantId ?? p.buyerId ?? null,
    participant_id: p.participantId ?? null,
    buyer_id: p.buyerId ?? null,
    category: p.category ?? null,
    review:
      e.review === null
        ? null
        : { status: e.review.status, actor: e.review.actor, reason: e.review.reason, decided_at: e.review.decidedAt?.toISOString() ?? null },
    livemode: e.tenant.livemode,
    created_at: e.createdAt.toISOString(),
  };
}

/** A decision an operator may take on an evaluation under review. */
export type ReviewDecision = "approved" | "denied";

/** Only an evaluation waiting for review can be decided, and only once. */
export function canDecide(e: Evaluation): boolean {
  return e.decision === "review" && e.review?.status === "pending";
}
