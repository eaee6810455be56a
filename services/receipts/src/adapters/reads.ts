/**
 * What receipts read from other services, over NATS with explicit deadlines: the ledger's record of a
 * transaction and the sale behind a checkout session. Their domain errors come back as the same DomainError.
 */
import { DomainError, internalSubject, schemas } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import type { Scope } from "../store/db.ts";

export interface Reads {
  /** Errors: transaction_not_found. */
  transactionRecord(scope: Scope, transactionId: string): Promise<schemas.TransactionRecord>;
  /** Errors: checkout_session_not_found. */
  checkoutSale(scope: Scope, checkoutId: string): Promise<schemas.CheckoutSale>;
}

export function natsReads(nc: NatsConnection, prefix: string, timeoutMs: number): Reads {
  async function ask(service: string, operation: string, payload: unknown): Promise<Record<string, unknown>> {
    const reply = await rpcCall(nc, internalSubject(prefix, service, operation), payload, { timeoutMs });
    if (reply.ok) return reply.body;
    const { code, message, hint } = reply.error;
    throw new DomainError(code, message, hint === undefined ? {} : { hint });
  }
  return {
    transactionRecord: async (scope, transactionId) =>
      (await ask("ledger", schemas.TRANSACTION_RECORD_OPERATION, { org_id: scope.orgId, livemode: scope.livemode, transaction_id: transactionId }))[
        "transaction"
      ] as schemas.TransactionRecord,
    checkoutSale: async (scope, checkoutId) =>
      (await ask("payments", schemas.CHECKOUT_SALE_OPERATION, { org_id: scope.orgId, livemode: scope.livemode, checkout_id: checkoutId }))[
        "checkout"
      ] as schemas.CheckoutSale,
  };
}
