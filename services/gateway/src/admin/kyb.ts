/**
 * Whether an org may have live keys, asked of the KYC service, which owns business verifications: its KYB in each
 * environment, read as the org's own requests read it (`getBusinessVerification`).
 */
import { DomainError, rpcSubject, type AuthContext } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import { kybAllowsLiveKeys } from "../admin.ts";

/** Whether the org's KYB allows a live key; `requestId` is the operator command's. */
export type KybCheck = (orgId: string, requestId: string) => Promise<boolean>;

export function natsKybCheck(nc: NatsConnection, prefix: string, timeoutMs: number): KybCheck {
  async function status(orgId: string, livemode: boolean, requestId: string): Promise<string> {
    const auth: AuthContext = { org_id: orgId, livemode, key_id: "svc_gateway", scopes: null, request_id: requestId };
    const payload = { auth, params: {}, query: {}, body: null, deadline: Date.now() + timeoutMs };
    const reply = await rpcCall(nc, rpcSubject(prefix, "kyc", "getBusinessVerification"), payload, { timeoutMs, requestId });
    // Nothing is created without the answer: the operator may simply run the command again.
    if (!reply.ok) throw new DomainError("service_unavailable", `The business verification could not be read (kyc: ${reply.error.code}); retry`);
    const kyb = reply.body["business_kyb"] as { status?: unknown } | undefined;
    return typeof kyb?.status === "string" ? kyb.status : "pending";
  }
  return async (orgId, requestId) => {
    const [sandbox, live] = await Promise.all([status(orgId, false, requestId), status(orgId, true, requestId)]);
    return kybAllowsLiveKeys([
      { livemode: false, status: sandbox },
      { livemode: true, status: live },
    ]);
  };
}
