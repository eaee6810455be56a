/**
 * Payments as refunds sees it: `internal.processorRefund`, the card refund of a live sale at the processor, over
 * NATS with an explicit deadline. No answer, or payments unable to reach the processor, is PaymentsOutcomeUnknown:
 * the refund stays pending and is asked again (payments and the processor both key the refund by its id).
 */
import { DomainError, internalSubject, schemas } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import { PaymentsOutcomeUnknown, type RefundsPayments } from "../usecases/ports.ts";

/** Errors after which asking again later can succeed (no answer, the processor unreachable or not configured yet). */
const RETRYABLE = new Set(["service_timeout", "service_unavailable", "provider_not_configured", "internal_error"]);

export function natsPayments(nc: NatsConnection, prefix: string, timeoutMs: number): RefundsPayments {
  return {
    processorRefund: async (tenant, req) => {
      const payload = { org_id: tenant.orgId, livemode: tenant.livemode, ...req };
      const reply = await rpcCall(nc, internalSubject(prefix, "payments", schemas.PROCESSOR_REFUND_OPERATION), payload, { timeoutMs });
      if (reply.ok) return (reply.body["processor_refund"] ?? null) as schemas.ProcessorRefundState | null;
      if (RETRYABLE.has(reply.error.code)) throw new PaymentsOutcomeUnknown(reply.error.code);
      throw new DomainError(reply.error.code, reply.error.message);
    },
  };
}
