/**
 * Internal operations other services call over NATS (never routed by the gateway): `svc.payments.internal.*`.
 * The receipts service asks which sale a checkout session recorded; the refunds service asks for the card refund
 * of a live sale (usecases/processor-refunds.ts). The payload names the org and environment.
 */
import { parseOrThrow, schemas } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { readCheckoutSale } from "../usecases/read-checkout-sale.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { startProcessorRefund } from "../usecases/processor-refunds.ts";

export function registerInternalReads(svc: Pick<Service, "handleInternal">, deps: PaymentsDeps): void {
  svc.handleInternal(
    schemas.PROCESSOR_REFUND_OPERATION,
    (payload) => parseOrThrow(schemas.ProcessorRefundRequest, payload),
    (req) => startProcessorRefund(deps, req),
  );
  svc.handleInternal(
    schemas.CHECKOUT_SALE_OPERATION,
    (payload) => parseOrThrow(schemas.CheckoutSaleRequest, payload),
    (req) => readCheckoutSale(deps, req),
  );
}
