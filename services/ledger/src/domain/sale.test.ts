import fc from "fast-check";
import { percentToBps } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { splitSale, type FeePayer } from "./sale.ts";

describe("splitSale", () => {
  it("parts always sum to the gross, the creator gets floor((gross − tax) × bps / 10000) less its fee part", () => {
    // Proves the split arithmetic for any amounts, percentages (two decimals) and fee payers.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000_000_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.constantFrom<FeePayer>("platform", "creator", "split"),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (gross, bps, payer, taxFrac, feeFrac) => {
          const salesTax = Math.floor(gross * taxFrac * 0.5);
          const processingFee = Math.floor((gross - salesTax) * feeFrac * 0.1);
          const s = splitSale({ gross, salesTax, processingFee, feePaidBy: payer, creatorBps: bps });
          if ("path" in s) {
            // Only a creator-paid fee larger than the creator's share is refused.
            expect(payer).not.toBe("platform");
            return;
          }
          expect(s.creatorAmount + s.platformAmount + s.processingFee + s.salesTax).toBe(gross);
          expect(s.creatorAmount + s.creatorFee).toBe(Number((BigInt(gross - salesTax) * BigInt(bps)) / 10_000n));
          expect(s.creatorAmount).toBeGreaterThanOrEqual(0);
          expect(s.net).toBe(s.creatorAmount + s.platformAmount);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("rounds percent to basis points (2.3% is 230 bps) and charges fees as asked", () => {
    // Proves the worked examples: default 80/20, a split fee, and tax taken off before the split.
    expect(percentToBps(2.3)).toBe(230);
    expect(splitSale({ gross: 10_000, salesTax: 0, processingFee: 0, feePaidBy: "platform", creatorBps: 8000 })).toMatchObject({
      creatorAmount: 8000,
      platformAmount: 2000,
    });
    expect(splitSale({ gross: 10_000, salesTax: 1000, processingFee: 301, feePaidBy: "split", creatorBps: 7000 })).toMatchObject({
      creatorAmount: 6300 - 150,
      platformAmount: 2700 - 151,
      net: 8699,
    });
    expect(splitSale({ gross: 999, salesTax: 0, processingFee: 0, feePaidBy: "platform", creatorBps: 3333 })).toMatchObject({
      creatorAmount: 332,
      platformAmount: 667,
    });
    expect(splitSale({ gross: 100, salesTax: 101, processingFee: 0, feePaidBy: "platform", creatorBps: 8000 })).toMatchObject({ path: "sales_tax" });
    expect(splitSale({ gross: 100, salesTax: 0, processingFee: 90, feePaidBy: "creator", creatorBps: 5000 })).toMatchObject({ path: "processing_fee" });
  });
});
