/**
 * The operators' review of evaluations whose decision is `review` (`admin risk list|approve|deny`). A decision is
 * taken once; it writes `risk.decided` with the evaluation, its operation, its key and the decision, in the
 * transaction that records it, so the caller holding the movement (a payout under review) learns of it exactly once.
 */
import { DomainError } from "@treasury/contracts";
import { canDecide, presentEvaluation, type Evaluation, type ReviewDecision } from "../domain/evaluations.ts";
import type { ReviewFilter, RiskDeps } from "./ports.ts";

export const REVIEW_LIST_LIMIT_DEFAULT = 50;
export const REVIEW_LIST_LIMIT_MAX = 500;

export async function reviewQueue(deps: Pick<RiskDeps, "evaluations">, filter: ReviewFilter): Promise<Evaluation[]> {
  return deps.evaluations.reviewQueue(filter);
}

/** Errors: evaluation_not_found, invalid_state_transition (not under review, or decided already). */
export async function decideReview(
  deps: Pick<RiskDeps, "evaluations" | "now">,
  input: { evaluationId: string; decision: ReviewDecision; actor: string; reason: string | null },
): Promise<Evaluation> {
  const found = await deps.evaluations.getById(input.evaluationId);
  if (found === undefined) throw new DomainError("evaluation_not_found", `Evaluation ${input.evaluationId} not found`);
  const notPending = () =>
    new DomainError(
      "invalid_state_transition",
      `Evaluation ${found.id} is ${found.decision}${found.review ? ` (review ${found.review.status})` : ""}: nothing to decide`,
    );
  if (!canDecide(found)) throw notPending();
  const at = deps.now(found.tenant);
  const decided = await deps.evaluations.decide(found.id, input.decision, { actor: input.actor, reason: input.reason, at }, (e) => {
    const shown = presentEvaluation(e);
    return {
      type: "risk.decided",
      data: { evaluation: shown, operation: shown.operation, key: shown.key, decision: input.decision, actor: input.actor, reason: input.reason },
    };
  });
  // Another operator decided between the read and the update.
  if (decided === undefined) throw notPending();
  return decided;
}
