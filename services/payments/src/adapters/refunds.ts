/**
 * The refunds service as payments needs it, over NATS with an explicit deadline: `createRefundRequest` for the
 * hosted wallet page (with the org and environment of the wallet session, never taken from the browser), and
 * `internal.processorRefundSettled` when the card processor settles a refund. A refunds domain error comes back as
 * the same DomainError.
 */
import { DomainError, internalSubject, newRequestId, schemas, type AuthContext } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { Scope } from "./ledger.ts";

export interface RefundRequestInput {
  sale_reference: string;
  customer_id?: string;
  customer_email?: string;
  amount?: number;
  reason?: string;
  idempotency_key: string;
  metadata: Record<string, unknown>;
}

export interface RefundsClient {
  /** Answers the created (or, for a repeated idempotency_key, the existing) refund request. */
  createRefundRequest(scope: Scope, body: RefundRequestInput): Promise<Record<string, unknown>>;
  /** Tells the refunds service the processor settled a card refund; resolves once it has acted on it. */
  processorRefundSettled(
    scope: Scope,
    body: { refund_id: string; processor_refund_id: string; status: "succeeded" | "failed"; failure_reason: string | null },
  ): Promise<void>;
}

function internalAuth(scope: Scope): AuthContext {
  return { org_id: scope.orgId, livemode: scope.livemode, key_id: "svc_payments", scopes: null, request_id: newRequestId() };
}

export function natsRefunds(nc: NatsConnection, prefix: string, timeoutMs: number): RefundsClient {
  return {
    createRefundRequest: async (scope, body) => {
      const reply = await rpcCall(
        nc,
        internalSubject(prefix, "refunds", "createRefundRequest"),
        { auth: internalAuth(scope), params: {}, query: {}, body, deadline: Date.now() + timeoutMs },
        { timeoutMs },
      );
      if (!reply.ok)
        throw new DomainError(reply.error.code, reply.error.message, { ...(reply.error.details !== undefined ? { details: reply.error.details } : {}) });
      return reply.body["refund_request"] as Record<string, unknown>;
    },
    processorRefundSettled: async (scope, body) => {
      const payload = { org_id: scope.orgId, livemode: scope.livemode, ...body };
      const reply = await rpcCall(nc, internalSubject(prefix, "refunds", schemas.PROCESSOR_REFUND_SETTLED_OPERATION), payload, { timeoutMs });
      if (!reply.ok) throw new DomainError(reply.error.code, reply.error.message);
    },
  };
}
