/**
 * `internal.checkoutSale`: the receipts service asks which sale a checkout session recorded (the request names the
 * org and environment). Errors: checkout_session_not_found.
 */
import { DomainError, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import type { CheckoutRow } from "../domain/records.ts";
import type { PaymentsDeps } from "./deps.ts";

type CheckoutSaleRequest = z.output<typeof schemas.CheckoutSaleRequest>;

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

export async function readCheckoutSale(deps: Pick<PaymentsDeps, "checkouts">, req: CheckoutSaleRequest): Promise<{ checkout: schemas.CheckoutSale }> {
  const row = await deps.checkouts.find({ orgId: req.org_id, livemode: req.livemode }, req.checkout_id.toLowerCase());
  if (row === undefined) throw new DomainError("checkout_session_not_found", `Checkout session ${req.checkout_id} not found`);
  return { checkout: checkoutSale(row) };
}
