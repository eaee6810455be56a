/**
 * getBusinessVerification / getCreatorVerification (each in the caller's environment), and the internal creator
 * status payouts reads. An organisation or creator that never submitted has the empty profile: pending,
 * everything missing.
 *
 * Errors: participant_not_found (a creator the ledger does not know), service_unavailable (the ledger did not answer).
 */
import type { AuthContext, schemas } from "@treasury/contracts";
import { presentVerification } from "../domain/present.ts";
import { businessMissingFields, creatorMissingFields } from "../domain/requirements.ts";
import { findVerification, getSubmission, type Q, type VerificationKey } from "../store/verifications.ts";
import type { KycDeps } from "./deps.ts";

async function profile(q: Q, key: VerificationKey, emptyMissing: readonly string[]): Promise<schemas.KycProfileView> {
  const v = await findVerification(q, key);
  const latest = v === undefined ? undefined : await getSubmission(q, v.latest_submission_id);
  return presentVerification(v, latest, emptyMissing);
}

/**
 * The organisation's KYB in the caller's environment. Payout eligibility asks this too (internal subject, the
 * payout's org and environment in its auth), so a live payout reads the live verification only.
 */
export async function getBusiness(deps: KycDeps, auth: AuthContext): Promise<{ business_kyb: schemas.KycProfileView }> {
  const key: VerificationKey = { subject: "business", orgId: auth.org_id, livemode: auth.livemode };
  return { business_kyb: await profile(deps.sql, key, businessMissingFields({})) };
}

export async function getCreator(
  deps: KycDeps,
  auth: AuthContext,
  participantId: string,
): Promise<{ creator_kyc: schemas.KycProfileView & { participant_id: string } }> {
  const key: VerificationKey = { subject: "creator", orgId: auth.org_id, livemode: auth.livemode, participantId };
  // A verification exists only for a participant the ledger knew; without one, ask the ledger.
  if ((await findVerification(deps.sql, key)) === undefined) await deps.participants.requireParticipant(auth, participantId);
  return { creator_kyc: { participant_id: participantId, ...(await profile(deps.sql, key, creatorMissingFields({}))) } };
}

/** For payout eligibility: the creator's status and tax certification (pending and uncertified without a verification). */
export async function getCreatorStatus(deps: KycDeps, auth: AuthContext, participantId: string): Promise<{ creator_kyc: schemas.CreatorKycStatus }> {
  const v = await findVerification(deps.sql, { subject: "creator", orgId: auth.org_id, livemode: auth.livemode, participantId });
  return { creator_kyc: { participant_id: participantId, status: v?.status ?? "pending", tax_certified: v?.tax_certified ?? false } };
}
