/**
 * getBusinessVerification / getCreatorVerification (each in the caller's environment), and the internal creator
 * status payouts reads. An organisation or creator that never submitted has the empty profile: pending,
 * everything missing.
 *
 * Errors: participant_not_found (a creator the ledger does not know), service_unavailable (the ledger did not answer).
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { presentVerification } from "../domain/present.ts";
import { businessMissingFields, creatorMissingFields } from "../domain/requirements.ts";
import type { KycDeps, KycStore, VerificationKey } from "./ports.ts";

async function profile(store: KycStore, key: VerificationKey, emptyMissing: readonly string[]): Promise<schemas.KycProfileView> {
  const v = await store.findVerification(key);
  const latest = v === undefined ? undefined : await store.getSubmission(v.latest_submission_id);
  return presentVerification(v, latest, emptyMissing);
}

/**
 * The organisation's KYB in the caller's environment. Payout eligibility asks this too (internal subject, the
 * payout's org and environment in its auth), so a live payout reads the live verification only.
 */
export async function getBusiness(deps: KycDeps, tenant: Tenant): Promise<{ business_kyb: schemas.KycProfileView }> {
  const key: VerificationKey = { subject: "business", orgId: tenant.orgId, livemode: tenant.livemode };
  return { business_kyb: await profile(deps.store, key, businessMissingFields({})) };
}

export async function getCreator(
  deps: KycDeps,
  tenant: Tenant,
  participantId: string,
): Promise<{ creator_kyc: schemas.KycProfileView & { participant_id: string } }> {
  const key: VerificationKey = { subject: "creator", orgId: tenant.orgId, livemode: tenant.livemode, participantId };
  // A verification exists only for a participant the ledger knew; without one, ask the ledger.
  if ((await deps.store.findVerification(key)) === undefined) await deps.participants.requireParticipant(tenant, participantId);
  return { creator_kyc: { participant_id: participantId, ...(await profile(deps.store, key, creatorMissingFields({}))) } };
}

/** For payout eligibility: the creator's status and tax certification (pending and uncertified without a verification). */
export async function getCreatorStatus(deps: KycDeps, tenant: Tenant, participantId: string): Promise<{ creator_kyc: schemas.CreatorKycStatus }> {
  const v = await deps.store.findVerification({ subject: "creator", orgId: tenant.orgId, livemode: tenant.livemode, participantId });
  return { creator_kyc: { participant_id: participantId, status: v?.status ?? "pending", tax_certified: v?.tax_certified ?? false } };
}
