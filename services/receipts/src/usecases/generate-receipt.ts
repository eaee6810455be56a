/**
 * generateReceipt: one receipt per sale. The sale is named by a checkout session (its recorded sale) or by the
 * sale transaction itself; order ids and metadata are the merchant's labels. Generating again for the same
 * sale answers the same receipt (created: false); different labels for it are idempotency_conflict.
 */
import { isDeepStrictEqual } from "node:util";
import { DomainError, newId, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { ReceiptRow, ReceiptsDeps } from "./ports.ts";
import { presentReceipt } from "./present.ts";

type Body = z.output<typeof schemas.GenerateReceiptBody>;

export function hostedUrlOf(altBaseUrl: string, receiptId: string): string {
  return `${altBaseUrl.replace(/\/+$/, "")}/v1/receipts/${receiptId}/view`;
}

/** The sale a request names, and what a checkout knows of it. Errors: see generateReceipt. */
async function resolveSale(
  deps: Pick<ReceiptsDeps, "receipts" | "reads">,
  tenant: Tenant,
  body: Body,
): Promise<{ saleTransactionId: string; checkout: schemas.CheckoutSale | undefined }> {
  if (body.checkout_id === undefined) {
    if (body.sale_transaction_id === undefined) {
      throw new DomainError("validation_error", "Name the sale: checkout_id or sale_transaction_id is required", {
        details: [{ path: "checkout_id", message: "checkout_id or sale_transaction_id is required" }],
        hint: "POST /v1/receipts/generate with checkout_id (a completed checkout session) or sale_transaction_id",
      });
    }
    return { saleTransactionId: body.sale_transaction_id, checkout: undefined };
  }
  const checkout = await deps.reads.checkoutSale(tenant, body.checkout_id.toLowerCase());
  if (checkout.status !== "completed" || checkout.sale_transaction_id === null) {
    throw new DomainError("checkout_not_completed", `Checkout session ${checkout.id} is ${checkout.status}; a receipt needs its sale`, {
      hint: "Generate the receipt after the checkout completes (checkout.completed webhook)",
    });
  }
  if (body.sale_transaction_id !== undefined && body.sale_transaction_id !== checkout.sale_transaction_id) {
    throw new DomainError(
      "receipt_sale_mismatch",
      `Checkout session ${checkout.id} recorded sale ${checkout.sale_transaction_id}, not ${body.sale_transaction_id}`,
    );
  }
  return { saleTransactionId: checkout.sale_transaction_id, checkout };
}

/** The receipt of the sale, and whether this request issued it (false: an earlier or concurrent one did). */
export interface GeneratedReceipt {
  receipt: ReceiptRow;
  created: boolean;
}

/** The existing receipt answers a repeat, unless the repeat gives it other labels. */
function replay(existing: ReceiptRow, body: Body): GeneratedReceipt {
  const differs =
    (body.order_id !== undefined && body.order_id !== existing.order_id) ||
    (body.external_order_id !== undefined && body.external_order_id !== existing.external_order_id) ||
    (body.metadata !== undefined && !isDeepStrictEqual(JSON.parse(JSON.stringify(body.metadata)), existing.metadata)) ||
    (body.checkout_id !== undefined && existing.checkout_session_id !== null && body.checkout_id.toLowerCase() !== existing.checkout_session_id);
  if (differs) {
    throw new DomainError("idempotency_conflict", `Sale ${existing.sale_transaction_id} already has receipt ${existing.id} with other order ids or metadata`, {
      extra: { receipt: presentReceipt(existing) },
      hint: `GET /v1/receipts/${existing.id}`,
    });
  }
  return { receipt: existing, created: false };
}

/**
 * Errors: validation_error (no sale named), checkout_session_not_found, checkout_not_completed,
 * receipt_sale_mismatch, transaction_not_found, transaction_not_a_sale, idempotency_conflict.
 */
export async function generateReceipt(
  deps: Pick<ReceiptsDeps, "receipts" | "reads">,
  tenant: Tenant,
  body: Body,
  altBaseUrl: string,
): Promise<GeneratedReceipt> {
  const { saleTransactionId, checkout } = await resolveSale(deps, tenant, body);
  const existing = await deps.receipts.findBySale(tenant, saleTransactionId);
  if (existing !== undefined) return replay(existing, body);
  const record = await deps.reads.transactionRecord(tenant, saleTransactionId);
  if (record.sale === null) {
    throw new DomainError("transaction_not_a_sale", `Transaction ${saleTransactionId} is a ${record.transaction_type}, not a sale`, {
      hint: "Pass the sale_transaction_id of a checkout or recorded sale, or GET /v1/receipts/proofs/{transaction_id} for a proof of any transaction",
    });
  }
  const id = newId("rcpt");
  const inserted = await deps.receipts.insert({
    id,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    sale_transaction_id: saleTransactionId,
    checkout_session_id: checkout?.id ?? null,
    order_id: body.order_id ?? null,
    external_order_id: body.external_order_id ?? null,
    total_amount: record.sale.gross,
    sales_tax: record.sale.sales_tax,
    currency: record.currency,
    metadata: body.metadata ?? {},
    hosted_url: hostedUrlOf(altBaseUrl, id),
    merchant_name: checkout?.merchant_name ?? record.sale.participant_display_name ?? record.sale.participant_id,
    product_name: checkout?.product_name ?? null,
    description: record.description,
    sold_at: new Date(record.created_at),
  });
  // A concurrent request for the same sale won the insert: answer its receipt, as a repeat would.
  if (inserted === undefined) {
    const winner = await deps.receipts.findBySale(tenant, saleTransactionId);
    if (winner === undefined) throw new Error("receipt insert conflicted but no receipt is visible");
    return replay(winner, body);
  }
  return { receipt: inserted, created: true };
}
