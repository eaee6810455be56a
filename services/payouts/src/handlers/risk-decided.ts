/**
 * `risk.decided` (an operator's decision on an evaluation under review) moves the payout it held: a durable
 * consumer of its own (`payouts-risk-decided`), so a decision made while payouts was down is applied when it is back.
 * The event's claim and the payout's move are separate commits; the move is guarded by the row's state, so a
 * redelivery changes nothing, and a ledger post left unanswered is finished by the reconciler.
 */
import { eventSubject, type schemas } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { applyRiskDecision } from "../usecases/risk-review.ts";

export const RISK_DECIDED_DURABLE = "payouts-risk-decided";

export function registerRiskDecisions(svc: Pick<Service, "consume" | "prefix" | "log">, deps: PayoutsDeps): void {
  svc.consume({
    durable: RISK_DECIDED_DURABLE,
    filterSubject: eventSubject(svc.prefix, "risk.decided"),
    handler: async (evt) => {
      const data = evt.data as unknown as schemas.RiskDecidedData;
      const moved = await applyRiskDecision(
        deps,
        { orgId: evt.org_id, livemode: evt.livemode },
        {
          evaluationId: data.evaluation.id,
          operation: data.operation,
          decision: data.decision,
        },
      );
      if (moved !== undefined)
        svc.log.info({ payout_id: moved.id, evaluation_id: data.evaluation.id, status: moved.status }, "payout moved by a risk decision");
    },
  });
}
