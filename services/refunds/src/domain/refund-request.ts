/**
 * The refund request's states and the moves between them (pure):
 *   created → processing (approve: its refund is recorded and executed) → completed | failed
 *   created → rejected (reject) | cancelled (cancel)
 * Every other move is illegal (409 invalid_state_transition naming the state). Approving a request that is
 * already processing or completed is not a move: it answers the approval's outcome (a retry after a timeout).
 *
 * A `created` request nobody reviewed expires: once its `expires_at` passes on its own clock (live: real time;
 * sandbox: the org's test clock) the service cancels it (`cancelled_by: "schedule"`, cancellation_reason
 * `expired`). The wire shapes have no `expired` status, so an expired request is a cancelled one, and approving,
 * rejecting or cancelling it is an illegal move like any other.
 */
import { schemas } from "@treasury/contracts";
import type { RequestFields } from "./records.ts";

export type RefundRequestStatus = schemas.RefundRequestStatus;

export type ReviewAction = "approve" | "reject" | "cancel";

const TARGET: Record<ReviewAction, RefundRequestStatus> = { approve: "processing", reject: "rejected", cancel: "cancelled" };

/** The state a review action moves a `created` request to. */
export function targetOf(action: ReviewAction): RefundRequestStatus {
  return TARGET[action];
}

/** Only a request that nobody has decided on yet moves. */
export function canMove(from: RefundRequestStatus): boolean {
  return from === "created";
}

/** An approval seen again after it moved the request: answered with its outcome, not refused. */
export function isApprovalReplay(from: RefundRequestStatus, action: ReviewAction): boolean {
  return action === "approve" && (from === "processing" || from === "completed");
}

const DAY_MS = 86_400_000;

/** When a request made at `now` (its org's clock) expires unless reviewed first. */
export function expiresAtOf(now: Date, ttlDays: number): Date {
  if (!Number.isSafeInteger(ttlDays) || ttlDays < 1) throw new Error(`refund request time to live must be a whole number of days, got ${ttlDays}`);
  return new Date(now.getTime() + ttlDays * DAY_MS);
}

/** A request still waiting for a review whose deadline has passed at `now` (its org's clock). */
export function isDue(row: { status: RefundRequestStatus; expires_at: Date }, now: Date): boolean {
  return row.status === "created" && row.expires_at.getTime() <= now.getTime();
}

/** What expiring a request sets. */
export type ExpiryFields = Required<Pick<RequestFields, "status" | "cancelled_by" | "cancellation_reason" | "cancelled_at">>;

/** What expiring a request sets: cancelled by the schedule at `at`, its org's now. */
export function expiryFields(at: Date): ExpiryFields {
  return { status: "cancelled", cancelled_by: "schedule", cancellation_reason: schemas.REFUND_REQUEST_EXPIRED_REASON, cancelled_at: at };
}
