/**
 * What payout eligibility needs from the kyc service: a creator's verification status and tax certification
 * (`svc.kyc.internal.getCreatorStatus`) and the organisation's business verification status
 * (`svc.kyc.internal.getBusinessVerification`), each with the caller's org and environment; and from the tax
 * service whether the creator certified a W-9 there (`svc.tax.internal.taxProfileStatus`).
 */
import { DomainError, internalSubject, newRequestId, schemas, type AuthContext, type Tenant } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { ComplianceDirectory } from "../usecases/ports.ts";

export type { ComplianceDirectory, CreatorCompliance } from "../usecases/ports.ts";

/** Internal calls carry an auth context of the org+environment the work belongs to. */
function internalAuth(tenant: Tenant): AuthContext {
  return { org_id: tenant.orgId, livemode: tenant.livemode, key_id: "svc_payouts", scopes: null, request_id: newRequestId() };
}

export function natsCompliance(nc: NatsConnection, prefix: string, timeoutMs: number): ComplianceDirectory {
  async function ask(tenant: Tenant, operation: string, params: Record<string, string>): Promise<Record<string, unknown>> {
    const payload = { auth: internalAuth(tenant), params, query: {}, body: {}, deadline: Date.now() + timeoutMs };
    const reply = await rpcCall(nc, internalSubject(prefix, "kyc", operation), payload, { timeoutMs });
    if (reply.ok) return reply.body;
    // Nothing was stored yet: the client may simply retry.
    if (reply.error.code === "service_timeout" || reply.error.code === "service_unavailable" || reply.error.code === "not_implemented") {
      throw new DomainError("service_unavailable", "Verification status is unavailable right now; retry the request");
    }
    throw new Error(`kyc ${operation} failed: ${reply.error.code} ${reply.error.message}`);
  }
  return {
    async creator(tenant, participantId) {
      const body = await ask(tenant, schemas.CREATOR_KYC_STATUS_OPERATION, { participant_id: participantId });
      const parsed = schemas.CreatorKycStatus.parse(body["creator_kyc"]);
      return { status: parsed.status, tax_certified: parsed.tax_certified };
    },
    async taxProfileCertified(tenant, participantId) {
      const request: schemas.TaxProfileStatusRequest = { org_id: tenant.orgId, livemode: tenant.livemode, participant_id: participantId };
      const reply = await rpcCall(nc, internalSubject(prefix, "tax", schemas.TAX_PROFILE_STATUS_OPERATION), request, { timeoutMs });
      // Unanswered (the tax service not deployed, or down) is "not certified there": eligibility fails closed, and
      // the KYC submission's certification still counts.
      if (!reply.ok) return false;
      return schemas.TaxProfileStatus.parse(reply.body["tax_profile"]).certified;
    },
    async businessStatus(tenant) {
      const body = await ask(tenant, "getBusinessVerification", {});
      const kyb = body["business_kyb"] as { status?: unknown } | undefined;
      return typeof kyb?.status === "string" ? kyb.status : "pending";
    },
  };
}
