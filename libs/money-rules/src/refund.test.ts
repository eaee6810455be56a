// Proves the refund arithmetic: parts always sum to the amount, no side gives back more than it received, and
// any sequence of partial refunds (of any modes) ends, once nothing remains, exactly where one full refund ends.
import fc from "fast-check";
import { AMOUNT_MAX_CENTS, cents, DomainError, type RefundFrom } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { chargeFee, refundParts, shareSale, type FeePayer, type SaleState } from "./sale.ts";

function sale(gross: number, creator: number, tax: number): SaleState {
  return {
    saleReference: "s",
    gross: cents(gross),
    creatorAmount: cents(creator),
    salesTax: cents(tax),
    refundedAmount: cents(0),
    creatorRefunded: cents(0),
    platformRefunded: cents(0),
    reversed: false,
  };
}

/** Applies parts to the sale state, as the ledger's update does. */
function apply(s: SaleState, p: Exclude<ReturnType<typeof refundParts>, DomainError>): SaleState {
  return {
    ...s,
    refundedAmount: cents(s.refundedAmount + p.amount),
    creatorRefunded: cents(s.creatorRefunded + p.fromCreator),
    platformRefunded: cents(s.platformRefunded + p.fromPlatform),
  };
}

const saleArb = fc
  .record({ gross: fc.integer({ min: 1, max: 10_000_000 }), creatorBps: fc.integer({ min: 0, max: 10_000 }), taxBps: fc.integer({ min: 0, max: 3_000 }) })
  .map(({ gross, creatorBps, taxBps }) => {
    const tax = Math.floor((gross * taxBps) / 10_000);
    const creator = Math.floor(((gross - tax) * creatorBps) / 10_000);
    return sale(gross, creator, tax);
  });

describe("refundParts", () => {
  it("a full refund gives back each side whole, tax included", () => {
    const p = refundParts(sale(10_000, 7_200, 1_000), undefined, "both");
    expect(p).toMatchObject({ amount: 10_000, fromCreator: 7_200, fromPlatform: 2_800, tax: 1_000, revenue: 1_800, remaining: 0, full: true });
  });

  it("refuses reversed, fully refunded and over-remaining refunds with the remaining amount", () => {
    expect((refundParts({ ...sale(100, 80, 0), reversed: true }, 10, "both") as DomainError).code).toBe("sale_already_reversed");
    expect((refundParts({ ...sale(100, 80, 0), refundedAmount: cents(100) }, 10, "both") as DomainError).code).toBe("sale_already_fully_refunded");
    const over = refundParts({ ...sale(100, 80, 0), refundedAmount: cents(30), platformRefunded: cents(30) }, 71, "both") as DomainError;
    expect([over.code, over.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 70]);
    const side = refundParts(sale(100, 80, 0), 21, "platform_only") as DomainError;
    expect([side.code, side.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 20]);
  });

  it("partial refunds of both sides, in any sizes, end exactly where one full refund ends", () => {
    fc.assert(
      fc.property(saleArb, fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 12 }), (s0, sizes) => {
        const full = refundParts(s0, undefined, "both");
        if (full instanceof DomainError) throw full;
        let s = s0;
        let tax = 0;
        for (const size of sizes) {
          const left = s.gross - s.refundedAmount;
          if (left === 0) break;
          const p = refundParts(s, Math.min(size, left), "both");
          if (p instanceof DomainError) throw p;
          expect(p.fromCreator + p.fromPlatform).toBe(p.amount);
          expect(p.tax + p.revenue).toBe(p.fromPlatform);
          expect(p.revenue).toBeGreaterThanOrEqual(0);
          tax += p.tax;
          s = apply(s, p);
        }
        const rest = refundParts(s, undefined, "both");
        if (!(rest instanceof DomainError)) {
          tax += rest.tax;
          s = apply(s, rest);
        }
        expect([s.creatorRefunded, s.platformRefunded, tax]).toEqual([full.fromCreator, full.fromPlatform, full.tax]);
      }),
      { numRuns: 500 },
    );
  });

  it("mixed modes never take more from a side than it received, and always sum to the amount", () => {
    const mode = fc.constantFrom<RefundFrom>("both", "platform_only", "creator_only");
    fc.assert(
      fc.property(saleArb, fc.array(fc.record({ size: fc.integer({ min: 1, max: 1_000_000 }), mode }), { maxLength: 12 }), (s0, steps) => {
        let s = s0;
        for (const { size, mode: m } of steps) {
          const p = refundParts(s, size, m);
          if (p instanceof DomainError) {
            expect(["refund_amount_exceeds_remaining", "sale_already_fully_refunded"]).toContain(p.code);
            continue;
          }
          expect(p.fromCreator + p.fromPlatform).toBe(size);
          if (m === "platform_only") expect(p.fromCreator).toBe(0);
          if (m === "creator_only") expect(p.fromPlatform).toBe(0);
          s = apply(s, p);
          expect(s.creatorRefunded).toBeLessThanOrEqual(s.creatorAmount);
          expect(s.platformRefunded).toBeLessThanOrEqual(s.gross - s.creatorAmount);
        }
      }),
      { numRuns: 500 },
    );
  });
  it("any partition of a sale's gross into refunds ends exactly where one full refund does, for any split and fee", () => {
    // Proves the cumulative rule over the whole input space: sales split by splitSale (any gross, tax, bps, fee and
    // payer), refunded in any number of parts of any sizes that add up to the gross.
    const splitArb = fc
      .record({
        gross: fc.integer({ min: 1, max: AMOUNT_MAX_CENTS }),
        taxFraction: fc.double({ min: 0, max: 1, noNaN: true }),
        bps: fc.integer({ min: 0, max: 10_000 }),
        fee: fc.integer({ min: 0, max: AMOUNT_MAX_CENTS }),
        payer: fc.constantFrom<FeePayer>("platform", "creator", "split"),
      })
      .map(({ gross, taxFraction, bps, fee, payer }) => chargeFee(shareSale(cents(gross), cents(Math.floor(gross * taxFraction)), bps), fee, payer));
    const partitionArb = splitArb.chain((split) =>
      fc
        .uniqueArray(fc.integer({ min: 1, max: Math.max(1, split.gross - 1) }), { maxLength: Math.min(20, split.gross - 1) })
        .map((cuts) => ({ split, cuts: cuts.filter((c) => c < split.gross).sort((a, b) => a - b) })),
    );
    fc.assert(
      fc.property(partitionArb, ({ split, cuts }) => {
        const s0 = sale(split.gross, split.creatorAmount, split.salesTax);
        const full = refundParts(s0, undefined, "both");
        if (full instanceof DomainError) throw full;
        let s = s0;
        let tax = 0;
        let last = 0;
        for (const cut of [...cuts, split.gross]) {
          const p = refundParts(s, cut - last, "both");
          if (p instanceof DomainError) throw p;
          expect(p.fromCreator + p.fromPlatform).toBe(p.amount);
          expect(Math.min(p.fromCreator, p.fromPlatform, p.tax, p.revenue)).toBeGreaterThanOrEqual(0);
          tax += p.tax;
          s = apply(s, p);
          last = cut;
        }
        expect(s.refundedAmount).toBe(split.gross);
        expect([s.creatorRefunded, s.platformRefunded, tax]).toEqual([full.fromCreator, full.fromPlatform, full.tax]);
        expect([full.fromCreator, full.tax]).toEqual([split.creatorAmount, split.salesTax]);
      }),
      { numRuns: 1000 },
    );
  });
});
