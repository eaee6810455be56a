/**
 * KYC states and the moves between them. A verification's status is its latest submission's status.
 *
 *   submission:  (none|pending|rejected|under_review|approved) ── draft ──▶ pending   (not from approved)
 *                (none|pending|rejected|under_review|approved) ── submit ─▶ under_review, or approved for a
 *                                                                           sandbox creator (auto-approval)
 *   operators:   under_review|suspended ── approve ─▶ approved
 *                under_review|suspended ── reject ──▶ rejected
 *                under_review|approved  ── suspend ─▶ suspended
 *
 * A suspended verification takes no new submission (only an operator lifts a suspension), and an approved one
 * is changed only by a complete submission that goes back to review, never by a draft. A submission replaced
 * before its decision becomes `superseded`. Pure functions.
 */
import { DomainError, type schemas } from "@treasury/contracts";

export type KycStatus = schemas.KycStatus;
export type SubmissionStatus = KycStatus | "superseded";
export type Subject = "business" | "creator";
export type ReviewAction = "approve" | "reject" | "suspend";

const DECISIONS: Record<ReviewAction, { from: readonly KycStatus[]; to: KycStatus }> = {
  approve: { from: ["under_review", "suspended"], to: "approved" },
  reject: { from: ["under_review", "suspended"], to: "rejected" },
  suspend: { from: ["under_review", "approved"], to: "suspended" },
};

function illegal(message: string, state: string, hint?: string): DomainError {
  return new DomainError("invalid_state_transition", message, { extra: { state }, ...(hint !== undefined ? { hint } : {}) });
}

/** The status a new submission starts in; throws invalid_state_transition when the verification refuses it. */
export function statusOfNewSubmission(opts: { subject: Subject; livemode: boolean; forReview: boolean; current: KycStatus | undefined }): KycStatus {
  if (opts.current === "suspended") {
    throw illegal("This verification is suspended; an operator must lift the suspension before anything is submitted", "suspended");
  }
  if (!opts.forReview) {
    if (opts.current === "approved") {
      throw illegal(
        "An approved verification is not replaced by a draft",
        "approved",
        "Send the complete submission with submit_for_review: true to have the changes reviewed",
      );
    }
    return "pending";
  }
  // The spec: a sandbox creator submission auto-approves; live ones and every business KYB go to review.
  return opts.subject === "creator" && !opts.livemode ? "approved" : "under_review";
}

/** The status an operator's action leads to from `from`; throws invalid_state_transition when it is not a legal move. */
export function decide(action: ReviewAction, from: SubmissionStatus): KycStatus {
  const rule = DECISIONS[action];
  if (from === "superseded" || !rule.from.includes(from)) {
    throw illegal(`Cannot ${action} a submission that is ${from} (allowed from: ${rule.from.join(", ")})`, from);
  }
  return rule.to;
}

/**
 * Whether the verification counts as a certified tax profile. A creator certifies with `certify_tax_info`
 * (review requires the tax id then); a business's tax id is part of every KYB review, so approval certifies it.
 */
export function taxCertified(subject: Subject, status: KycStatus, certifyTaxInfo: boolean): boolean {
  if (status !== "approved") return false;
  return subject === "business" || certifyTaxInfo;
}
