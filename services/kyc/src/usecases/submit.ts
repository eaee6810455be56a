/**
 * submitBusinessVerification / submitCreatorVerification: each POST is a new submission kept as history; the
 * verification of the caller's environment points at it and takes its status (a sandbox business submission has
 * its own verification and never changes the live one). `submit_for_review` (default true) sends it to review: a
 * sandbox creator submission is approved at once, everything else waits for an operator (`under_review`);
 * `false` keeps a draft (`pending`). A body with the spec's required fields is always accepted: what a review
 * also needs (domain/requirements.ts) is listed in `missing_fields`, and an operator cannot approve until a new
 * submission completes it (review.ts), so a live creator or business stays unverified meanwhile. Personal data
 * is sealed before it reaches the database; the clear columns hold types, statuses and a tax id's last four
 * digits only.
 *
 * Errors: validation_error (bad field; a live document without file_id or url), participant_not_found,
 * invalid_state_transition (suspended; a draft over an approved verification), service_unavailable (no PII
 * keys; the ledger did not answer).
 */
import { newId, type schemas, type Tenant } from "@treasury/contracts";
import { presentVerification } from "../domain/present.ts";
import { businessMissingFields, checkDocuments, creatorMissingFields, type BusinessBody, type CreatorBody } from "../domain/requirements.ts";
import { statusOfNewSubmission, taxCertified, type Subject } from "../domain/states.ts";
import { announce, eventData, recordDecision } from "./decisions.ts";
import { piiContext, requireSealer, type Submitter } from "./deps.ts";
import type { KycDeps, VerificationKey } from "./ports.ts";

/** The system's name in the audit trail for the spec's sandbox auto-approval. */
export const SANDBOX_AUTO_APPROVER = "system:sandbox_auto_approval";

/** A creator's verification as answers show it: whose it is, then the profile. */
export type CreatorVerification = schemas.KycProfileView & { participant_id: string };

interface Intake {
  key: VerificationKey;
  subject: Subject;
  participantId: string | null;
  forReview: boolean;
  missing: string[];
  clear: { business_type: string | null; tax_id_type: string | null; tax_id_last4: string | null; certify_tax_info: boolean; document_types: string[] };
  pii: Record<string, unknown>;
}

/** A document's type stays in the clear (review needs it); where its file is and what it says is sealed. */
function documentsPii(docs: BusinessBody["document_evidence"]): Record<string, unknown>[] {
  return docs.map(({ type: _type, ...rest }) => rest);
}

/** The organisation's verification in the caller's environment as this submission left it. */
export async function submitBusiness(deps: KycDeps, tenant: Tenant, submitter: Submitter, body: BusinessBody): Promise<schemas.KycProfileView> {
  checkDocuments(body.document_evidence, tenant.livemode);
  const intake: Intake = {
    // The caller's environment: a sandbox submission never changes the live verification.
    key: { subject: "business", orgId: tenant.orgId, livemode: tenant.livemode },
    subject: "business",
    participantId: null,
    forReview: body.submit_for_review ?? true,
    missing: businessMissingFields(body),
    clear: {
      business_type: body.business_type,
      tax_id_type: body.tax_id_type ?? null,
      tax_id_last4: body.tax_id_last4 ?? null,
      certify_tax_info: false,
      document_types: body.document_evidence.map((d) => d.type),
    },
    pii: {
      legal_name: body.legal_name,
      primary_contact: body.primary_contact,
      business_address: body.business_address,
      beneficial_owners: body.beneficial_owners ?? [],
      documents: documentsPii(body.document_evidence),
      metadata: body.metadata ?? {},
    },
  };
  return record(deps, tenant, submitter, intake);
}

/** The creator's verification as this submission left it, naming its participant. */
export async function submitCreator(
  deps: KycDeps,
  tenant: Tenant,
  submitter: Submitter,
  participantId: string,
  body: CreatorBody,
): Promise<CreatorVerification> {
  checkDocuments(body.document_evidence, tenant.livemode);
  const intake: Intake = {
    key: { subject: "creator", orgId: tenant.orgId, livemode: tenant.livemode, participantId },
    subject: "creator",
    participantId,
    forReview: body.submit_for_review ?? true,
    missing: creatorMissingFields(body),
    clear: {
      business_type: body.business_type ?? null,
      tax_id_type: body.tax_id_type ?? null,
      tax_id_last4: body.tax_id_last4 ?? null,
      certify_tax_info: body.certify_tax_info ?? false,
      document_types: body.document_evidence.map((d) => d.type),
    },
    pii: {
      legal_name: body.legal_name,
      email: body.email,
      date_of_birth: body.date_of_birth,
      address: body.address,
      display_name: body.display_name ?? null,
      documents: documentsPii(body.document_evidence),
      metadata: body.metadata ?? {},
    },
  };
  // The ledger owns participants: only a participant of this org and environment gets a verification.
  await deps.participants.requireParticipant(tenant, participantId);
  return { participant_id: participantId, ...(await record(deps, tenant, submitter, intake)) };
}

/** Seals, then in one transaction: the submission, the verification's new pointer and status, the audit row and event. */
async function record(deps: KycDeps, tenant: Tenant, submitter: Submitter, intake: Intake): Promise<schemas.KycProfileView> {
  const sealer = requireSealer(deps);
  const id = newId("kycs");
  const pii = sealer.sealJson(intake.pii, piiContext(id));
  const now = deps.now();
  return deps.store.transaction(async (tx) => {
    await tx.lockVerification(intake.key);
    const current = await tx.findVerification(intake.key);
    const status = statusOfNewSubmission({ subject: intake.subject, livemode: tenant.livemode, forReview: intake.forReview, current: current?.status });
    const certified = taxCertified(intake.subject, status, intake.clear.certify_tax_info);
    const row = await tx.insertSubmission({
      id,
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      subject: intake.subject,
      participant_id: intake.participantId,
      status,
      ...intake.clear,
      missing_fields: intake.missing,
      pii,
      pii_key_id: sealer.activeKeyId,
      request_id: submitter.requestId,
      key_id: submitter.keyId,
      submitted_at: intake.forReview ? now : null,
      reviewed_at: status === "approved" ? now : null,
    });
    await tx.saveVerification(intake.key, { status, taxCertified: certified, latestSubmissionId: id });
    if (current !== undefined) await tx.supersede(current.latest_submission_id);
    if (status === "approved") {
      await recordDecision(tx, row, tenant.livemode, {
        action: "auto_approve",
        from: "pending",
        actor: SANDBOX_AUTO_APPROVER,
        reason: null,
        taxCertified: certified,
        at: now,
      });
    } else {
      await announce(tx, row, eventData(row, { previousStatus: current?.status ?? null, taxCertified: certified, at: now }));
    }
    return presentVerification({ status, tax_certified: certified }, row, []);
  });
}
