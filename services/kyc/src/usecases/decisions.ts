/**
 * Recording a decision on a submission: the audit row (who, when, why, from and to which state) and the event,
 * in the caller's transaction, so a decision, its audit and its event exist together or not at all.
 */
import { newId, type KycEventType } from "@treasury/contracts";
import type { KycStatus, SubmissionStatus } from "../domain/states.ts";
import type { KycTx, NewReviewAction, SubmissionRow } from "./ports.ts";

const EVENT_OF: Record<KycStatus, KycEventType | undefined> = {
  pending: undefined,
  under_review: "kyc.submitted",
  approved: "kyc.approved",
  rejected: "kyc.rejected",
  suspended: "kyc.suspended",
};

/** Event data: ids, states, the actor and the reason. Never personal data. */
export function eventData(
  s: SubmissionRow,
  extra: { previousStatus: SubmissionStatus | null; taxCertified: boolean; actor?: string; reason?: string | null; at: Date },
): Record<string, unknown> {
  return {
    submission_id: s.id,
    subject: s.subject,
    participant_id: s.participant_id,
    status: s.status,
    previous_status: extra.previousStatus,
    tax_certified: extra.taxCertified,
    ...(extra.actor !== undefined ? { actor: extra.actor } : {}),
    ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
    at: extra.at.toISOString(),
  };
}

/** Writes the event a submission's new status announces (none for a draft); returns its id. */
export async function announce(tx: KycTx, s: SubmissionRow, data: Record<string, unknown>): Promise<string | undefined> {
  const type = s.status === "superseded" ? undefined : EVENT_OF[s.status];
  if (type === undefined) return undefined;
  return tx.writeEvent({ type, org_id: s.org_id, livemode: s.livemode, data });
}

export interface Decision {
  action: NewReviewAction["action"];
  from: SubmissionStatus;
  actor: string;
  reason: string | null;
  taxCertified: boolean;
  at: Date;
}

/**
 * The audit row and the event of a decision already applied to `s` (its new status) and to the verification of
 * environment `livemode`. Both carry that environment: a decision on a business submission that both the sandbox
 * and the live verification rest on (the 0002 migration) changes both, and is recorded once for each.
 */
export async function recordDecision(tx: KycTx, s: SubmissionRow, livemode: boolean, d: Decision): Promise<{ actionId: string; eventId: string }> {
  const eventId = newId("evt");
  const data = eventData(s, { previousStatus: d.from, taxCertified: d.taxCertified, actor: d.actor, reason: d.reason, at: d.at });
  const type = s.status === "superseded" ? undefined : EVENT_OF[s.status];
  if (type === undefined) throw new Error(`a decision cannot lead to ${s.status}`);
  await tx.writeEvent({ id: eventId, type, org_id: s.org_id, livemode, data });
  const actionId = await tx.insertReviewAction({
    org_id: s.org_id,
    livemode,
    submission_id: s.id,
    subject: s.subject,
    participant_id: s.participant_id,
    action: d.action,
    from_status: d.from,
    to_status: s.status,
    actor: d.actor,
    reason: d.reason,
    event_id: eventId,
    created_at: d.at,
  });
  return { actionId, eventId };
}
