// Proves receipt generation and reading through real RPC, with the ledger and payments as real processes on real
// PostgreSQL and NATS: one receipt per sale (repeats, other names of the same sale and concurrent requests all
// answer it), the fields, bad input on every field with a precise code and nothing stored, and isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { schemas } from "@treasury/contracts";
import { ALT_BASE, authFor, newOrg, startHarness, type Harness } from "./test-support.ts";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function receiptCount(): Promise<number> {
  const [row] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from receipts.receipts`;
  return Number(row?.n);
}

describe("generateReceipt", () => {
  it("issues one receipt per sale: from the checkout, again, by its sale id, and under concurrent requests", async () => {
    // Proves 201 then 200 with the same receipt, the wire shape, the hosted URL on the alt base, and one row.
    const auth = authFor(newOrg());
    const cs = await h.checkout(auth, { amount: 4_999, productName: "Guitar lessons" });
    const first = await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id, order_id: "ord-1", metadata: { cart: "c9" } } });
    expect(first.status).toBe(201);
    const receipt = first.body["receipt"] as schemas.ReceiptView;
    expect(first.body).toMatchObject({ created: true, receipt_id: receipt.id, hosted_url: receipt.hosted_url });
    expect(receipt.id).toMatch(/^rcpt_[a-z0-9]{24}$/);
    expect(receipt).toEqual({
      id: receipt.id,
      status: "issued",
      hosted_url: `${ALT_BASE}/v1/receipts/${receipt.id}/view`,
      checkout_session_id: cs.id,
      sale_transaction_id: cs.saleTransactionId,
      order_id: "ord-1",
      external_order_id: null,
      total_amount: 4_999,
      currency: "USD",
      created_at: receipt.created_at,
      metadata: { cart: "c9" },
    });
    const again = await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ created: false, receipt_id: receipt.id, hosted_url: receipt.hosted_url, receipt });
    const bySale = await h.ok("generateReceipt", auth, { body: { sale_transaction_id: cs.saleTransactionId, order_id: "ord-1" } });
    expect(bySale.body["receipt"]).toEqual(receipt);
    const both = await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id.toUpperCase(), sale_transaction_id: cs.saleTransactionId } });
    expect(both.body["receipt_id"]).toBe(receipt.id);
    const got = await h.ok("getReceipt", auth, { params: { receipt_id: receipt.id } });
    expect(got.body).toEqual({ receipt_id: receipt.id, hosted_url: receipt.hosted_url, receipt });

    const other = await h.checkout(auth);
    const racing = await Promise.all(Array.from({ length: 8 }, () => h.ok("generateReceipt", auth, { body: { checkout_id: other.id } })));
    const ids = new Set(racing.map((r) => r.body["receipt_id"]));
    expect(ids.size).toBe(1);
    expect(racing.filter((r) => r.status === 201)).toHaveLength(1);
    const [rows] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from receipts.receipts where sale_transaction_id = ${other.saleTransactionId}`;
    expect(Number(rows?.n)).toBe(1);
  });

  it("issues a receipt for a recorded sale named by its transaction id", async () => {
    // Proves a sale without a checkout: the total is the sale's gross, the merchant the seller's display name.
    const auth = authFor(newOrg());
    const txn = await h.recordSale(auth, 2_500);
    const r = await h.ok("generateReceipt", auth, { body: { sale_transaction_id: txn, external_order_id: "ext-7" } });
    expect(r.status).toBe(201);
    expect(r.body["receipt"]).toMatchObject({ checkout_session_id: null, sale_transaction_id: txn, external_order_id: "ext-7", total_amount: 2_500 });
    const [row] = await h.env.adminSql<
      { merchant_name: string; description: string }[]
    >`select merchant_name, description from receipts.receipts where sale_transaction_id = ${txn}`;
    expect(row).toEqual({ merchant_name: "Recorded Seller", description: "Workshop ticket" });
  });

  it("answers idempotency_conflict with the existing receipt when a repeat gives the sale other labels", async () => {
    // Proves the same sale never gets a second receipt, and other order ids or metadata are refused, not ignored.
    const auth = authFor(newOrg());
    const cs = await h.checkout(auth);
    const first = await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id, order_id: "A", metadata: { k: 1 } } });
    for (const body of [{ order_id: "B" }, { external_order_id: "X" }, { metadata: { k: 2 } }]) {
      const e = await h.err("generateReceipt", auth, { body: { checkout_id: cs.id, ...body } });
      expect(e.code, JSON.stringify(body)).toBe("idempotency_conflict");
      expect((e.extra?.["receipt"] as schemas.ReceiptView).id).toBe(first.body["receipt_id"]);
    }
    expect((await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id, order_id: "A", metadata: { k: 1 } } })).status).toBe(200);
  });

  it("bad input on every field answers a precise code and stores nothing", async () => {
    // Proves each malformed or unusable field is a 4xx code (never a 5xx) and that no receipt row appears.
    const auth = authFor(newOrg());
    const pending = await h.checkout(auth, { complete: false });
    const sale = await h.checkout(auth);
    const otherSale = await h.recordSale(auth);
    const adjustment = await h.adjustment(auth);
    const before = await receiptCount();
    const cases: Array<[Record<string, unknown>, string, string?]> = [
      [{}, "validation_error", "checkout_id"],
      [{ order_id: "only-an-order" }, "validation_error", "checkout_id"],
      [{ checkout_id: "not-a-uuid" }, "validation_error", "checkout_id"],
      [{ checkout_id: 42 }, "validation_error", "checkout_id"],
      [{ sale_transaction_id: "sale_1" }, "validation_error", "sale_transaction_id"],
      [{ sale_transaction_id: ["txn_a"] }, "validation_error", "sale_transaction_id"],
      [{ checkout_id: sale.id, order_id: "" }, "validation_error", "order_id"],
      [{ checkout_id: sale.id, order_id: "x".repeat(256) }, "validation_error", "order_id"],
      [{ checkout_id: sale.id, external_order_id: 7 }, "validation_error", "external_order_id"],
      [{ checkout_id: sale.id, metadata: "m" }, "validation_error", "metadata"],
      [{ checkout_id: sale.id, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, "validation_error", "metadata"],
      [{ checkout_id: "00000000-0000-4000-8000-000000000000" }, "checkout_session_not_found"],
      [{ checkout_id: pending.id }, "checkout_not_completed"],
      [{ checkout_id: sale.id, sale_transaction_id: otherSale }, "receipt_sale_mismatch"],
      [{ sale_transaction_id: "txn_doesnotexist" }, "transaction_not_found"],
      [{ sale_transaction_id: adjustment }, "transaction_not_a_sale"],
    ];
    for (const [body, code, path] of cases) {
      const e = await h.err("generateReceipt", auth, { body });
      expect(e.code, JSON.stringify(body).slice(0, 80)).toBe(code);
      if (path !== undefined)
        expect(
          e.details?.map((d) => d.path),
          JSON.stringify(body).slice(0, 80),
        ).toContain(path);
    }
    expect(await receiptCount()).toBe(before);
  });
});

describe("getReceipt", () => {
  it("finds receipts of the caller's org and environment only", async () => {
    // Proves unknown and malformed ids, another org and the other environment all get 404 receipt_not_found.
    const auth = authFor(newOrg());
    const cs = await h.checkout(auth);
    const id = (await h.ok("generateReceipt", auth, { body: { checkout_id: cs.id } })).body["receipt_id"] as string;
    const live = { ...auth, livemode: true };
    for (const [who, receiptId] of [
      [live, id],
      [authFor(newOrg()), id],
      [auth, "rcpt_unknown000000000000000"],
      [auth, "nope"],
    ] as const) {
      expect((await h.err("getReceipt", who, { params: { receipt_id: receiptId } })).code).toBe("receipt_not_found");
    }
    // A sale id of another environment is not found either, and a live checkout of this id does not exist.
    expect((await h.err("generateReceipt", live, { body: { sale_transaction_id: cs.saleTransactionId } })).code).toBe("transaction_not_found");
    expect((await h.err("generateReceipt", live, { body: { checkout_id: cs.id } })).code).toBe("checkout_session_not_found");
  });
});
