/**
 * What payout eligibility needs from the kyc service: a creator's verification status and tax certification
 * (`svc.kyc.internal.getCreatorStatus`) and the organisation's business verification status
 * (`svc.kyc.internal.getBusinessVerification`), each with the caller's org and environment.
 */
import { DomainError, internalSubject, schemas } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import { internalAuth, type Scope } from "./ledger.ts";

export interface CreatorCompliance {
  status: string;
  tax_certified: boolean;
}

export interface ComplianceDirectory {
  creator(scope: Scope, participantId: string): Promise<CreatorCompliance>;
  /** The organisation's business verification status (`pending` before any submission). */
  businessStatus(scope: Scope): Promise<string>;
}

export function natsCompliance(nc: NatsConnection, prefix: string, timeoutMs: number): ComplianceDirectory {
  async function ask(scope: Scope, operation: string, params: Record<string, string>): Promise<Record<string, unknown>> {
    const payload = { auth: internalAuth(scope), params, query: {}, body: {}, deadline: Date.now() + timeoutMs };
    const reply = await rpcCall(nc, internalSubject(prefix, "kyc", operation), payload, { timeoutMs });
    if (reply.ok) return reply.body;
    // Nothing was stored yet: the client may simply retry.
    if (reply.error.code === "service_timeout" || reply.error.code === "service_unavailable" || reply.error.code === "not_implemented") {
      throw new DomainError("service_unavailable", "Verification status is unavailable right now; retry the request");
    }
    throw new Error(`kyc ${operation} failed: ${reply.error.code} ${reply.error.message}`);
  }
  return {
    async creator(scope, participantId) {
      const body = await ask(scope, schemas.CREATOR_KYC_STATUS_OPERATION, { participant_id: participantId });
      const parsed = schemas.CreatorKycStatus.parse(body["creator_kyc"]);
      return { status: parsed.status, tax_certified: parsed.tax_certified };
    },
    async businessStatus(scope) {
      const body = await ask(scope, "getBusinessVerification", {});
      const kyb = body["business_kyb"] as { status?: unknown } | undefined;
      return typeof kyb?.status === "string" ? kyb.status : "pending";
    },
  };
}
