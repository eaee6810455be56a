/**
 * What receipts read from other services (the Reads port), over NATS with explicit deadlines: the ledger's
 * record of a transaction and the sale behind a checkout session. Their domain errors come back as the same
 * DomainError.
 */
import { DomainError, internalSubject, schemas } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { Reads } from "../usecases/ports.ts";

export function natsReads(nc: NatsConnection, prefix: string, timeoutMs: number): Reads {
  async function ask(service: string, operation: string, payload: unknown): Promise<Record<string, unknown>> {
    const reply = await rpcCall(nc, internalSubject(prefix, service, operation), payload, { timeoutMs });
    if (reply.ok) return reply.body;
    const { code, message, hint } = reply.error;
    throw new DomainError(code, message, hint === undefined ? {} : { hint });
  }
  return {
    transactionRecord: async (tenant, transactionId) =>
      (await ask("ledger", schemas.TRANSACTION_RECORD_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, transaction_id: transactionId }))[
        "transaction"
      ] as schemas.TransactionRecord,
    checkoutSale: async (tenant, checkoutId) =>
      (await ask("payments", schemas.CHECKOUT_SALE_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, checkout_id: checkoutId }))[
        "checkout"
      ] as schemas.CheckoutSale,
  };
}
