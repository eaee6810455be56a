/**
 * Evaluate a proposed movement: the money path's `svc.risk.internal.evaluate` and `POST /v1/fraud/evaluations`.
 *
 * 1. The tenant's enabled policies (one indexed read) that apply to the operation. None: the evaluation is
 *    stored as `allow` in one statement and answered.
 * 2. The ledger's sales figures, when a payout_ratio or refund_rate policy applies: read before any transaction.
 * 3. One transaction locks the counters, reads them over their windows, applies the rules (domain/rules.ts) and
 *    writes the evaluation, its hits, the counters it takes in (unless denied), its `risk.review_required` event
 *    and its alerts; a key evaluated before answers its first evaluation instead (nothing is counted again).
 *    Counting evaluations of a tenant arriving together share that transaction (store/evaluation-batches.ts).
 *
 * Errors: idempotency_conflict (an API key reused with another body), service_unavailable (the ledger).
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { alertPayload, alertsFor } from "../domain/alerts.ts";
import { activityNeeds, counterNeeds, type ActivityNeed } from "../domain/counters.ts";
import { presentEvaluation, type Evaluation, type EvaluationSource } from "../domain/evaluations.ts";
import { applicable, type Policy } from "../domain/policies.ts";
import { evaluate, type CounterState, type Proposal, type SalesActivity } from "../domain/rules.ts";
import type { EvaluationRecord, Recorded, RiskDeps } from "./ports.ts";

export interface EvaluationRequest {
  source: EvaluationSource;
  key: string;
  /** sha256 of the request as sent: an API replay with another body is refused. */
  requestHash: string;
  proposal: Proposal;
}

/** A key seen before: its first evaluation, unless an API client reused its key for another request. */
function replay(existing: Evaluation, request: EvaluationRequest): Recorded {
  if (request.source === "api" && existing.requestHash !== request.requestHash) {
    throw new DomainError("idempotency_conflict", "This idempotency_key was used with a different evaluation request", {
      extra: { evaluation: presentEvaluation(existing) },
    });
  }
  return { evaluation: existing, duplicate: true };
}

async function readActivity(deps: Pick<RiskDeps, "ledger">, tenant: Tenant, needs: readonly ActivityNeed[]): Promise<Map<string, SalesActivity>> {
  const activity = new Map<string, SalesActivity>();
  for (const need of needs) {
    if (!activity.has(need.key)) activity.set(need.key, await deps.ledger.salesActivity(tenant, need.participantId, need.windowDays));
  }
  return activity;
}

function newEvaluation(id: string, tenant: Tenant, request: EvaluationRequest, now: Date): Evaluation {
  return {
    id,
    tenant,
    source: request.source,
    key: request.key,
    requestHash: request.requestHash,
    decision: "allow",
    proposal: request.proposal,
    hits: [],
    review: null,
    createdAt: now,
  };
}

export async function evaluateMovement(deps: RiskDeps, tenant: Tenant, request: EvaluationRequest): Promise<Recorded> {
  const policies = applicable(await deps.policies.enabled(tenant), request.proposal.operation);
  const now = deps.now(tenant);
  if (policies.length === 0) {
    const recorded = await deps.evaluations.record(tenant, request.source, request.key, [], () => ({
      evaluation: newEvaluation(deps.newId("evaluation"), tenant, request, now),
      counted: [],
      event: undefined,
      alerts: [],
    }));
    return recorded.duplicate ? replay(recorded.evaluation, request) : recorded;
  }
  const recorded = await recordWithPolicies(deps, tenant, request, policies, now);
  return recorded.duplicate ? replay(recorded.evaluation, request) : recorded;
}

async function recordWithPolicies(deps: RiskDeps, tenant: Tenant, request: EvaluationRequest, policies: Policy[], now: Date): Promise<Recorded> {
  const proposal = request.proposal;
  const activityWanted = activityNeeds(policies, proposal);
  const activity = await readActivity(deps, tenant, activityWanted);
  const counters = counterNeeds(policies, proposal, tenant, now);
  const configs = await deps.alertConfigs.active(tenant);
  const id = deps.newId("evaluation");
  const inputs = {
    now,
    activity,
    counterOf: new Map(counters.map((c) => [c.policyId, c.counter])),
    activityOf: new Map(activityWanted.map((a) => [a.policyId, a.key])),
  };
  return deps.evaluations.record(tenant, request.source, request.key, counters, (states: ReadonlyMap<string, CounterState>): EvaluationRecord => {
    const outcome = evaluate(policies, proposal, { ...inputs, counters: states });
    const evaluation: Evaluation = {
      ...newEvaluation(id, tenant, request, now),
      decision: outcome.decision,
      hits: outcome.hits,
      review: outcome.decision === "review" ? { status: "pending", actor: null, reason: null, decidedAt: null } : null,
    };
    const shown = presentEvaluation(evaluation);
    return {
      evaluation,
      counted: outcome.decision === "deny" ? [] : counters,
      event:
        outcome.decision === "review" ? { type: "risk.review_required", data: { evaluation: shown, operation: shown.operation, key: shown.key } } : undefined,
      alerts: alertsFor(evaluation, configs).map((config) => ({
        id: deps.newId("alertDelivery"),
        config,
        payload: alertPayload(config.alertType, evaluation, tenant, now),
      })),
    };
  });
}

export async function getEvaluation(deps: Pick<RiskDeps, "evaluations">, tenant: Tenant, id: string): Promise<Evaluation> {
  const found = await deps.evaluations.get(tenant, id);
  if (found === undefined)
    throw new DomainError("evaluation_not_found", `Evaluation ${id} not found`, { hint: "POST /v1/fraud/evaluations evaluates a proposal" });
  return found;
}
