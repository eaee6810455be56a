/**
 * Operators' review (the admin CLI's `kyc` commands, admin/commands.ts): the review queue, and approve /
 * reject / suspend of a verification's latest submission. Each decision writes the submission's new status, the
 * verification's, the audit row and the event in one transaction; the kyc service's relay publishes the event.
 *
 * Opening a submission's personal data for review is audited the same way (a `view` action, no event).
 *
 * Errors: kyc_not_found, invalid_state_transition (not the latest submission; not a legal move from its state;
 * approving a submission with missing_fields),
 * validation_error (missing reason, bad actor).
 */
import { DomainError } from "@treasury/contracts";
import type { Sealer } from "@treasury/service-kit";
import { decide, taxCertified, type KycStatus, type ReviewAction, type Subject } from "../domain/states.ts";
import { recordDecision } from "./decisions.ts";
import { piiContext } from "./deps.ts";
import type { KycStore, KycTx, ReviewQueueRow, SubmissionRow, VerificationKey } from "./ports.ts";

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 500;
const ACTOR_LENGTH_MAX = 255;
const REASON_LENGTH_MAX = 1_000;

export interface ReviewInput {
  submissionId: string;
  action: ReviewAction;
  actor: string;
  reason?: string | undefined;
  now?: Date;
}

export interface ReviewResult {
  submission_id: string;
  subject: Subject;
  org_id: string;
  livemode: boolean;
  participant_id: string | null;
  action: ReviewAction;
  previous_status: string;
  status: KycStatus;
  tax_certified: boolean;
  reason: string | null;
  actor: string;
  reviewed_at: string;
  /** The audit row and event of the first verification changed (the submission's own environment's, when it is one). */
  review_action_id: string;
  event_id: string;
  /** Each verification the decision changed, by environment, with its audit row and event. */
  verifications: { livemode: boolean; review_action_id: string; event_id: string }[];
}

/** Approval needs everything a review needs: a submission still missing fields waits for a complete one. */
function refuseIncomplete(s: SubmissionRow): void {
  if (s.missing_fields.length === 0) return;
  throw new DomainError("invalid_state_transition", `KYC submission ${s.id} cannot be approved: ${s.missing_fields.join(", ")} missing`, {
    hint: "The platform sends a new submission with the missing fields; approve that one",
    extra: { state: s.status, missing_fields: s.missing_fields },
  });
}

function invalid(path: string, message: string): DomainError {
  return new DomainError("validation_error", `${path}: ${message}`, { details: [{ path, message }] });
}

/** The audit trail's who and why; `reasonRequiredTo` names the act that must be explained. */
function checkActorAndReason(
  input: { actor: string; reason?: string | undefined },
  reasonRequiredTo: string | undefined,
): { actor: string; reason: string | null } {
  const actor = input.actor.trim();
  if (actor === "" || actor.length > ACTOR_LENGTH_MAX) throw invalid("actor", `must be 1–${ACTOR_LENGTH_MAX} characters`);
  const reason = input.reason?.trim() ?? "";
  if (reason.length > REASON_LENGTH_MAX) throw invalid("reason", `must be at most ${REASON_LENGTH_MAX} characters`);
  if (reasonRequiredTo !== undefined && reason === "") throw invalid("reason", `is required to ${reasonRequiredTo}`);
  return { actor, reason: reason === "" ? null : reason };
}

/** The verification of `s` in environment `livemode` (its own by default). */
function keyOf(s: SubmissionRow, livemode = s.livemode): VerificationKey {
  if (s.subject === "business") return { subject: "business", orgId: s.org_id, livemode };
  if (s.participant_id === null) throw new Error(`creator submission ${s.id} has no participant`);
  return { subject: "creator", orgId: s.org_id, livemode, participantId: s.participant_id };
}

/**
 * The verifications a decision on `s` changes: those still resting on it, never any other. That is the
 * verification of the submission's own environment, and for a business record a test key sent before
 * verifications were kept per environment, its live copy too (the 0002 migration).
 */
async function targetsOf(tx: KycTx, s: SubmissionRow): Promise<VerificationKey[]> {
  const resting = await tx.verificationsOf(s);
  if (resting.length === 0) {
    const own = await tx.findVerification(keyOf(s));
    if (own === undefined) throw new Error(`kyc submission ${s.id} has no verification`);
    throw new DomainError("invalid_state_transition", `KYC submission ${s.id} was replaced by ${own.latest_submission_id}; decide on that one`, {
      extra: { state: s.status, latest_submission_id: own.latest_submission_id },
    });
  }
  return resting.map((v) => keyOf(s, v.livemode));
}

/**
 * Applies the decision to the submission and to each verification resting on it; each verification gets its own
 * audit row and event, in its environment. The submission's own environment comes first. A decision on a sandbox
 * submission never reaches a live verification that rests on another submission.
 */
export async function reviewSubmission(store: KycStore, input: ReviewInput): Promise<ReviewResult> {
  // A refusal is explained to the platform (latest_submission.rejection_reason) and kept in the audit trail.
  const { actor, reason } = checkActorAndReason(input, input.action === "approve" ? undefined : input.action);
  const at = input.now ?? new Date();
  return store.transaction(async (tx) => {
    const found = await tx.getSubmission(input.submissionId);
    if (found === undefined) throw new DomainError("kyc_not_found", `KYC submission ${input.submissionId} not found`);
    await tx.lockVerification(keyOf(found));
    const submission = await tx.getSubmission(input.submissionId, { forUpdate: true });
    if (submission === undefined) throw new Error(`kyc submission ${input.submissionId} vanished under its lock`);
    const targets = await targetsOf(tx, submission);
    const to = decide(input.action, submission.status);
    if (to === "approved") refuseIncomplete(submission);
    const certified = taxCertified(submission.subject, to, submission.certify_tax_info);
    const decided = await tx.setSubmissionDecision(submission.id, { status: to, reviewedAt: at, rejectionReason: to === "approved" ? null : reason });
    const verifications: ReviewResult["verifications"] = [];
    for (const key of targets) {
      await tx.saveVerification(key, { status: to, taxCertified: certified, latestSubmissionId: submission.id });
      const decision = { action: input.action, from: submission.status, actor, reason, taxCertified: certified, at };
      const { actionId, eventId } = await recordDecision(tx, decided, key.livemode, decision);
      verifications.push({ livemode: key.livemode, review_action_id: actionId, event_id: eventId });
    }
    const [first] = verifications;
    if (first === undefined) throw new Error(`a decision on kyc submission ${submission.id} changed no verification`);
    return {
      submission_id: decided.id,
      subject: decided.subject,
      org_id: decided.org_id,
      livemode: decided.livemode,
      participant_id: decided.participant_id,
      action: input.action,
      previous_status: submission.status,
      status: to,
      tax_certified: certified,
      reason,
      actor,
      reviewed_at: at.toISOString(),
      review_action_id: first.review_action_id,
      event_id: first.event_id,
      verifications,
    };
  });
}

export interface ReviewQueueItem extends Omit<ReviewQueueRow, "submitted_at" | "updated_at"> {
  submitted_at: string | null;
  updated_at: string;
}

/** Verifications in `status` (latest submissions, oldest first), without personal data; `livemode` picks one environment. */
export async function listVerifications(
  store: KycStore,
  opts: { status: KycStatus; orgId?: string | undefined; subject?: Subject | undefined; livemode?: boolean | undefined; limit?: number | undefined },
): Promise<ReviewQueueItem[]> {
  const limit = opts.limit ?? LIST_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) throw invalid("limit", `must be an integer from 1 to ${LIST_LIMIT_MAX}`);
  const rows = await store.listByStatus({ status: opts.status, orgId: opts.orgId, subject: opts.subject, livemode: opts.livemode, limit });
  return rows.map((r) => ({ ...r, submitted_at: r.submitted_at?.toISOString() ?? null, updated_at: r.updated_at.toISOString() }));
}

const isoOrNull = (d: Date | null): string | null => d?.toISOString() ?? null;

/**
 * One submission for an operator's review: its clear facts, its personal data opened with the key ring, the
 * verification's history and the submission's audit trail. The access itself is recorded (who, when, why)
 * before the data is returned, in the same transaction.
 */
export async function showSubmission(
  store: KycStore,
  sealer: Sealer,
  input: { submissionId: string; actor: string; reason?: string | undefined; now?: Date },
): Promise<Record<string, unknown>> {
  // Opening personal data needs a stated purpose, kept with the access.
  const { actor, reason } = checkActorAndReason(input, "open personal data");
  const at = input.now ?? new Date();
  return store.transaction(async (tx) => {
    const s = await tx.getSubmission(input.submissionId);
    if (s === undefined) throw new DomainError("kyc_not_found", `KYC submission ${input.submissionId} not found`);
    const personal = sealer.openJson<Record<string, unknown>>(s.pii, piiContext(s.id));
    await tx.insertReviewAction({
      org_id: s.org_id,
      livemode: s.livemode,
      submission_id: s.id,
      subject: s.subject,
      participant_id: s.participant_id,
      action: "view",
      from_status: s.status,
      to_status: s.status,
      actor,
      reason,
      event_id: null,
      created_at: at,
    });
    const history = await tx.submissionHistory(keyOf(s));
    const actions = await tx.reviewActionsOf(s.id);
    return {
      submission: {
        id: s.id,
        subject: s.subject,
        org_id: s.org_id,
        livemode: s.livemode,
        participant_id: s.participant_id,
        status: s.status,
        business_type: s.business_type,
        tax_id_type: s.tax_id_type,
        tax_id_last4: s.tax_id_last4,
        certify_tax_info: s.certify_tax_info,
        document_types: s.document_types,
        missing_fields: s.missing_fields,
        submitted_at: isoOrNull(s.submitted_at),
        reviewed_at: isoOrNull(s.reviewed_at),
        rejection_reason: s.rejection_reason,
        personal_data: personal,
      },
      history: history.map((h) => ({
        ...h,
        submitted_at: isoOrNull(h.submitted_at),
        reviewed_at: isoOrNull(h.reviewed_at),
        created_at: h.created_at.toISOString(),
      })),
      review_actions: actions.map((a) => ({ ...a, created_at: a.created_at.toISOString() })),
    };
  });
}
