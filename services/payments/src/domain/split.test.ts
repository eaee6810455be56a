// Proves the split's parts always sum to the gross, the creator gets floor(net × bps), and percents round to bps.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AMOUNT_MAX_CENTS, cents } from "@treasury/contracts";
import { computeSplit, creatorBpsFor } from "./split.ts";

describe("computeSplit", () => {
  // Proves creator + platform + tax = gross for any amount, tax ≤ amount and bps, and the creator part is exact.
  it("parts always sum to the gross, remainder to the platform", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: AMOUNT_MAX_CENTS }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 10_000 }),
        (gross, taxFraction, bps) => {
          const tax = Math.floor(gross * taxFraction);
          const s = computeSplit(cents(gross), cents(tax), bps);
          expect(s.creator + s.platform + s.salesTax).toBe(gross);
          expect(s.creator).toBe(Number((BigInt(gross - tax) * BigInt(bps)) / 10_000n));
          expect(s.platform).toBeGreaterThanOrEqual(0);
          // The remainder goes to the platform: it never gets less than its own exact share.
          expect(BigInt(s.platform) * 10_000n >= BigInt(gross - tax) * BigInt(10_000 - bps)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  // Proves percents with two decimals become basis points by rounding (2.3 % is 230 bps, not 229).
  it("rounds percent × 100 to basis points", () => {
    expect(creatorBpsFor(2.3, undefined)).toBe(230);
    expect(creatorBpsFor(undefined, 70.15)).toBe(7015);
    expect(creatorBpsFor(undefined, null)).toBe(8000);
    expect(computeSplit(cents(1001), cents(0), 7000)).toMatchObject({ creator: 700, platform: 301 });
  });

  // Proves an impossible split (tax above gross) is refused rather than producing a negative platform share.
  it("refuses a tax above the gross", () => {
    expect(() => computeSplit(cents(100), cents(101), 5000)).toThrow(RangeError);
  });
});
