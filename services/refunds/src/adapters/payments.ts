/**
 * Payments as refunds sees it: `internal.processorRefund`, the card refund of a live sale at the processor, over
 * NATS with an explicit deadline. No answer, or payments unable to reach the processor, is PaymentsOutcomeUnknown:
 * the refund stays pending and is asked again (payments and the processor both key the refund by its id).
 */
import { DomainError, internalSubject, schemas } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { Scope } from "../store/db.ts";

export class PaymentsOutcomeUnknown extends Error {
  constructor(readonly code: string) {
    super(`payments could not refund the card payment yet (${code}); asked again later`);
    this.name = "PaymentsOutcomeUnknown";
  }
}

export interface PaymentsClient {
  /** The processor refund's state, or null when the sale was not paid by card through the processor. */
  processorRefund(scope: Scope, req: { refund_id: string; sale_reference: string; amount: number }): Promise<schemas.ProcessorRefundState | null>;
}

/** Errors after which asking again later can succeed (no answer, the processor unreachable or not configured yet). */
const RETRYABLE = new Set(["service_timeout", "service_unavailable", "provider_not_configured", "internal_error"]);

export function natsPayments(nc: NatsConnection, prefix: string, timeoutMs: number): PaymentsClient {
  return {
    processorRefund: async (scope, req) => {
      const payload = { org_id: scope.orgId, livemode: scope.livemode, ...req };
      const reply = await rpcCall(nc, internalSubject(prefix, "payments", schemas.PROCESSOR_REFUND_OPERATION), payload, { timeoutMs });
      if (reply.ok) return (reply.body["processor_refund"] ?? null) as schemas.ProcessorRefundState | null;
      if (RETRYABLE.has(reply.error.code)) throw new PaymentsOutcomeUnknown(reply.error.code);
      throw new DomainError(reply.error.code, reply.error.message);
    },
  };
}
