/** What the payouts service asks the KYC service; not part of the public API. */
import { z } from "zod";
import { KycStatus } from "../kyc.ts";

/**
 * Internal read of a creator's verification (request/reply `svc.kyc.getCreatorStatus`, never through the
 * gateway), for payout eligibility: request params `{participant_id}` with the caller's org and environment in
 * the auth context; reply body `{creator_kyc: CreatorKycStatus}`. A participant without a verification is `pending`.
 */
export const CREATOR_KYC_STATUS_OPERATION = "getCreatorStatus";
export const CreatorKycStatus = z.object({ participant_id: z.string(), status: KycStatus, tax_certified: z.boolean() });
export type CreatorKycStatus = z.infer<typeof CreatorKycStatus>;
