/**
 * The refund request's states and the moves between them (pure):
 *   created → processing (approve: its refund is recorded and executed) → completed | failed
 *   created → rejected (reject) | cancelled (cancel)
 * Every other move is illegal (409 invalid_state_transition naming the state). Approving a request that is
 * already processing or completed is not a move: it answers the approval's outcome (a retry after a timeout).
 */
import type { schemas } from "@treasury/contracts";

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
