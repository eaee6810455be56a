/**
 * The refunds service as payments needs it, over NATS with an explicit deadline: `createRefundRequest` for the
 * hosted wallet page (with the org and environment of the wallet session, never taken from the browser), and
 * `internal.processorRefundSettled` when the card processor settles a refund. A refunds domain error comes back as
 * the same DomainError.
 */
import { DomainError, internalSubject, newRequestId, schemas, type AuthContext, type Tenant } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { RefundsClient } from "../usecases/ports.ts";

function internalAuth(tenant: Tenant): AuthContext {
  return { org_id: tenant.orgId, livemode: tenant.livemode, key_id: "svc_payments", scopes: null, request_id: newRequestId() };
}

export function natsRefunds(nc: NatsConnection, prefix: string, timeoutMs: number): RefundsClient {
  return {
    createRefundRequest: async (tenant, body) => {
      const reply = await rpcCall(
        nc,
        internalSubject(prefix, "refunds", "createRefundRequest"),
        { auth: internalAuth(tenant), params: {}, query: {}, body, deadline: Date.now() + timeoutMs },
        { timeoutMs },
      );
      if (!reply.ok)
        throw new DomainError(reply.error.code, reply.error.message, { ...(reply.error.details !== undefined ? { details: reply.error.details } : {}) });
      return reply.body["refund_request"] as Record<string, unknown>;
    },
    processorRefundSettled: async (tenant, body) => {
      const payload = { org_id: tenant.orgId, livemode: tenant.livemode, ...body };
      const reply = await rpcCall(nc, internalSubject(prefix, "refunds", schemas.PROCESSOR_REFUND_SETTLED_OPERATION), payload, { timeoutMs });
      if (!reply.ok) throw new DomainError(reply.error.code, reply.error.message);
    },
  };
}
