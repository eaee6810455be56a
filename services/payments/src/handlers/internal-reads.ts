/**
 * Internal operations other services call over NATS (never routed by the gateway): `svc.payments.internal.*`.
 * The receipts service asks which sale a checkout session recorded; the refunds service asks for the card refund
 * of a live sale (usecases/processor-refunds.ts). The payload names the org and environment.
 */
import { DomainError, parseOrThrow, schemas } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { domainErrorReply } from "@treasury/service-kit";
import { findCheckout, type CheckoutRow } from "../store/checkouts.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { startProcessorRefund } from "../usecases/processor-refunds.ts";

function checkoutSale(row: CheckoutRow): schemas.CheckoutSale {
  return {
    id: row.id,
    status: row.status,
    sale_transaction_id: row.sale_transaction_id,
    merchant_name: row.merchant_name,
    product_name: row.product_name ?? row.product_id,
    amount: row.amount,
    currency: row.currency,
  };
}

export function registerInternalReads(svc: Pick<Service, "sql" | "rpc">, deps: PaymentsDeps): void {
  svc.rpc.handleRaw(schemas.PROCESSOR_REFUND_OPERATION, async (payload) => {
    try {
      const body = await startProcessorRefund(deps, parseOrThrow(schemas.ProcessorRefundRequest, payload));
      return { ok: true, status: 200, body };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  });
  svc.rpc.handleRaw(schemas.CHECKOUT_SALE_OPERATION, async (payload) => {
    try {
      const req = parseOrThrow(schemas.CheckoutSaleRequest, payload);
      const row = await findCheckout(svc.sql, { orgId: req.org_id, livemode: req.livemode }, req.checkout_id.toLowerCase());
      if (row === undefined) throw new DomainError("checkout_session_not_found", `Checkout session ${req.checkout_id} not found`);
      return { ok: true, status: 200, body: { checkout: checkoutSale(row) } };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  });
}
