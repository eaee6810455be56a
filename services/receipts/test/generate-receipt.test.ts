// Proves generateReceipt over in-memory ports: one receipt per sale, a repeat (by either name of the sale, or
// concurrent) answers the first one, other labels are idempotency_conflict, and refusals store nothing.
import { describe, expect, it } from "vitest";
import type { schemas, Tenant } from "@treasury/contracts";
import { generateReceipt } from "../src/usecases/generate-receipt.ts";
import { presentReceipt } from "../src/usecases/present.ts";
import { fakes, transactionRecord } from "./fakes.ts";

const ALT = "https://alt.example/";
const tenant: Tenant = { orgId: "org_unit", livemode: false };
const CHECKOUT_ID = "0b6f3c1e-9a4d-4c1b-8f3e-2a7d5c9e1f00";

function withSale() {
  const f = fakes();
  const sale = transactionRecord(tenant, { gross: 4_999 });
  f.reads.records.set(sale.id, sale);
  const checkout: schemas.CheckoutSale = {
    id: CHECKOUT_ID,
    status: "completed",
    sale_transaction_id: sale.id,
    merchant_name: "Ana's Studio",
    product_name: "Guitar lessons",
    amount: 4_999,
    currency: "USD",
  };
  f.reads.addCheckout(tenant, checkout);
  return { ...f, sale, checkout };
}

describe("generateReceipt", () => {
  it("issues one receipt per sale; a repeat by checkout, by sale id or at the same time answers the first", async () => {
    const { deps, receipts, sale } = withSale();
    const first = await generateReceipt(deps, tenant, { checkout_id: CHECKOUT_ID.toUpperCase(), order_id: "ord-1", metadata: { cart: "c9" } }, ALT);
    expect(first.created).toBe(true);
    const receipt = presentReceipt(first.receipt);
    expect(first.receipt.hosted_url).toBe(`https://alt.example/v1/receipts/${receipt.id}/view`);
    expect(receipt).toMatchObject({
      checkout_session_id: CHECKOUT_ID,
      sale_transaction_id: sale.id,
      order_id: "ord-1",
      total_amount: 4_999,
      currency: "USD",
      metadata: { cart: "c9" },
    });
    expect(receipts.rows[0]).toMatchObject({ merchant_name: "Ana's Studio", product_name: "Guitar lessons" });

    const again = await generateReceipt(deps, tenant, { checkout_id: CHECKOUT_ID }, ALT);
    const bySale = await generateReceipt(deps, tenant, { sale_transaction_id: sale.id, order_id: "ord-1" }, ALT);
    for (const replay of [again, bySale]) {
      expect(replay.created).toBe(false);
      expect(presentReceipt(replay.receipt)).toEqual(receipt);
    }
    expect(receipts.rows).toHaveLength(1);
  });

  it("concurrent first requests for one sale make one receipt, and all answer it", async () => {
    const { deps, receipts, sale } = withSale();
    const answers = await Promise.all(Array.from({ length: 5 }, () => generateReceipt(deps, tenant, { sale_transaction_id: sale.id }, ALT)));
    expect(receipts.rows).toHaveLength(1);
    expect(answers.map((a) => a.created).sort()).toEqual([false, false, false, false, true]);
    expect(new Set(answers.map((a) => a.receipt.id))).toEqual(new Set([receipts.rows[0]!.id]));
  });

  it("a repeat with other labels is idempotency_conflict, carrying the existing receipt", async () => {
    const { deps, receipts } = withSale();
    const first = await generateReceipt(deps, tenant, { checkout_id: CHECKOUT_ID, order_id: "ord-1" }, ALT);
    for (const body of [
      { checkout_id: CHECKOUT_ID, order_id: "ord-2" },
      { checkout_id: CHECKOUT_ID, external_order_id: "ext-1" },
      { checkout_id: CHECKOUT_ID, metadata: { cart: "other" } },
    ]) {
      await expect(generateReceipt(deps, tenant, body, ALT)).rejects.toMatchObject({
        code: "idempotency_conflict",
        extra: { receipt: { id: first.receipt.id } },
      });
    }
    expect(receipts.rows).toHaveLength(1);
  });

  it("refuses what is not a completed sale of this tenant, and stores nothing", async () => {
    const { deps, receipts, reads, sale, checkout } = withSale();
    const adjustment = transactionRecord(tenant, { sale: null });
    reads.records.set(adjustment.id, adjustment);
    const pendingId = "1b6f3c1e-9a4d-4c1b-8f3e-2a7d5c9e1f01";
    reads.addCheckout(tenant, { ...checkout, id: pendingId, status: "pending", sale_transaction_id: null });
    const cases: Array<[Parameters<typeof generateReceipt>[2], string, Tenant?]> = [
      [{}, "validation_error"],
      [{ sale_transaction_id: adjustment.id }, "transaction_not_a_sale"],
      [{ checkout_id: pendingId }, "checkout_not_completed"],
      [{ checkout_id: CHECKOUT_ID, sale_transaction_id: adjustment.id }, "receipt_sale_mismatch"],
      [{ sale_transaction_id: "txn_nothere" }, "transaction_not_found"],
      [{ sale_transaction_id: sale.id }, "transaction_not_found", { ...tenant, livemode: true }],
      [{ checkout_id: CHECKOUT_ID }, "checkout_session_not_found", { orgId: "org_other", livemode: false }],
    ];
    for (const [body, code, who] of cases) {
      await expect(generateReceipt(deps, who ?? tenant, body, ALT), JSON.stringify(body)).rejects.toMatchObject({ code });
    }
    expect(receipts.rows).toHaveLength(0);
  });
});
