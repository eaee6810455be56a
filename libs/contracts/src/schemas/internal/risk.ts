/**
 * What the money path asks the risk service, what risk asks the ledger, and the evaluation both answer; not part
 * of the public API (the evaluation object is: `GET /v1/fraud/evaluations/{id}`).
 */
import { z } from "zod";
import { ParticipantId } from "../../ids.ts";
import { PositiveCents } from "../../money.ts";
import { isoDate, str } from "../common.ts";
import { MONEY_RISK_OPERATIONS, type PolicyType, type RiskDecision, type RiskOperation } from "../risk.ts";
import { InternalScope } from "./scope.ts";

/**
 * `svc.risk.internal.evaluate`: evaluate a money movement before it happens. `key` is the caller's deterministic
 * reference of the movement (`payout:<reference_id>`, `checkout:<session>`, `refund:<request key>`): the evaluation is idempotent on
 * (org_id, livemode, key), so a retry answers the first evaluation (`duplicate: true`) and counts nothing again.
 * `facts` carries what the caller owns and risk cannot read elsewhere (when a bank account last changed).
 * Answer: `{evaluation: RiskEvaluation, duplicate: boolean}`. Errors: validation_error, service_unavailable (the
 * ledger could not be read: retry with the same key).
 */
export const RISK_EVALUATE_OPERATION = "internal.evaluate";
export const RiskEvaluateRequest = z.object({
  ...InternalScope,
  operation: z.enum(MONEY_RISK_OPERATIONS),
  key: str(255).min(1),
  amount: PositiveCents,
  currency: str(3).optional(),
  participant_id: ParticipantId.optional(),
  buyer_id: str(255).optional(),
  ip: str(64).optional(),
  category: str(100).optional(),
  authorizing_instrument_id: str(255).optional(),
  expected_date: isoDate.optional(),
  facts: z
    .object({
      /** When the bank account the money goes to was set or last changed (payouts, for `new_bank_account`). */
      bank_account_updated_at: isoDate.optional(),
    })
    .optional(),
});
export type RiskEvaluateRequest = z.infer<typeof RiskEvaluateRequest>;

/** One policy an evaluation hit, and why. */
export interface RiskHit {
  policy_id: string;
  policy_type: PolicyType;
  severity: "hard" | "soft";
  reason: string;
}

/** An operator's decision on an evaluation under review (`admin risk approve|deny`). */
export interface RiskReview {
  status: "pending" | "approved" | "denied";
  actor: string | null;
  reason: string | null;
  decided_at: string | null;
}

/** The evaluation as the API and the internal operation answer it. */
export interface RiskEvaluation {
  id: string;
  decision: RiskDecision;
  hits: RiskHit[];
  operation: RiskOperation;
  key: string;
  amount: number;
  currency: string;
  /** Whom the movement is about: the participant, else the buyer, else null. */
  subject: string | null;
  participant_id: string | null;
  buyer_id: string | null;
  category: string | null;
  /** Null unless the decision is `review`. */
  review: RiskReview | null;
  livemode: boolean;
  created_at: string;
}

/**
 * Event data. `risk.review_required`: `{evaluation, operation, key}` when an evaluation's decision is review.
 * `risk.decided`: `{evaluation, operation, key, decision: "approved"|"denied", actor, reason}` when an operator
 * decided it; the evaluation carries its review.
 */
export interface RiskReviewRequiredData {
  evaluation: RiskEvaluation;
  operation: RiskOperation;
  key: string;
}
export interface RiskDecidedData extends RiskReviewRequiredData {
  decision: "approved" | "denied";
  actor: string;
  reason: string | null;
}

/**
 * `svc.ledger.internal.salesActivity`: what risk needs of the ledger for `payout_ratio` and `refund_rate`: the
 * sales recorded in the last `window_days` days, counted from midnight UTC of the ledger's own day (the
 * participant's, or the whole org's without one), their gross and what has been refunded of them so far.
 * Answer: `{activity: SalesActivity}`.
 */
export const SALES_ACTIVITY_OPERATION = "internal.salesActivity";
export const SalesActivityRequest = z.object({
  ...InternalScope,
  participant_id: ParticipantId.optional(),
  window_days: z.number().int().min(1).max(366),
});
export const SalesActivity = z.object({
  sales_count: z.number().int().nonnegative(),
  // Sums over many sales may pass one operation's ceiling; they stay exact integers.
  gross_cents: z.number().int().nonnegative().refine(Number.isSafeInteger),
  refunded_cents: z.number().int().nonnegative().refine(Number.isSafeInteger),
});
export type SalesActivity = z.infer<typeof SalesActivity>;
