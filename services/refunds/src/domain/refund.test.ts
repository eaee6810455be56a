// Proves the pure rules of what makes two refund requests the same refund, and the refund request's legal moves.
import { describe, expect, it } from "vitest";
import { intentHash, intentOf, ledgerReferenceOf, refundRequestKey, requestKeyOf } from "./refund.ts";
import { canMove, isApprovalReplay, targetOf } from "./refund-request.ts";

const base = { original_sale_reference: "checkout:abc", reason: "damaged", amount: 500 };

describe("request keys", () => {
  it("an idempotency_key is the key; without one the sale, amount and external id are, whatever else differs", () => {
    expect(requestKeyOf(intentOf({ ...base, idempotency_key: "k1" }))).toBe("key:k1");
    const a = requestKeyOf(intentOf(base));
    expect(requestKeyOf(intentOf({ ...base, reason: "other", metadata: { x: 1 } }))).toBe(a);
    expect(requestKeyOf(intentOf({ sale_reference: "checkout:abc", reason: "damaged", amount: 500 }))).toBe(a);
    expect(requestKeyOf(intentOf({ ...base, amount: 501 }))).not.toBe(a);
    expect(requestKeyOf(intentOf({ ...base, external_refund_id: "e1" }))).not.toBe(a);
    expect(requestKeyOf(intentOf({ ...base, amount: undefined }))).not.toBe(a);
    expect(refundRequestKey("rr_1")).toBe("refund_request:rr_1");
  });

  it("the hash ignores the key and key order, treats refund_from both as its default, and sees every other field", () => {
    const h = intentHash(intentOf({ ...base, idempotency_key: "k1", metadata: { a: 1, b: 2 } }));
    expect(intentHash(intentOf({ ...base, idempotency_key: "k2", refund_from: "both", metadata: { b: 2, a: 1 } }))).toBe(h);
    for (const change of [{ reason: "x" }, { amount: 1 }, { refund_from: "creator_only" as const }, { external_refund_id: "e" }, { metadata: { a: 1 } }]) {
      expect(intentHash(intentOf({ ...base, metadata: { a: 1, b: 2 }, ...change }))).not.toBe(h);
    }
  });

  it("ledger references come from the service's own ids", () => {
    expect(ledgerReferenceOf("re_1", null)).toBe("refund:re_1");
    expect(ledgerReferenceOf("re_1", "rr_9")).toBe("refund_request:rr_9");
  });
});

describe("refund request moves", () => {
  it("only a created request moves; approving a processing or completed one is a replay", () => {
    expect([targetOf("approve"), targetOf("reject"), targetOf("cancel")]).toEqual(["processing", "rejected", "cancelled"]);
    expect(canMove("created")).toBe(true);
    for (const s of ["processing", "completed", "rejected", "cancelled", "failed"] as const) expect(canMove(s)).toBe(false);
    expect([isApprovalReplay("processing", "approve"), isApprovalReplay("completed", "approve")]).toEqual([true, true]);
    expect([isApprovalReplay("failed", "approve"), isApprovalReplay("completed", "cancel"), isApprovalReplay("created", "approve")]).toEqual([
      false,
      false,
      false,
    ]);
  });
});
