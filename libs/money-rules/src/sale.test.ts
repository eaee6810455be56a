// Proves the sale arithmetic over the whole input space: every split sums to the gross with no negative part but
// the platform's documented net, the fee policy (the platform bears what the creator's share cannot), and a
// dispute's parts sum to the disputed amount and match what a refund of it takes.
import fc from "fast-check";
import { AMOUNT_MAX_CENTS, cents, DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { chargeFee, creatorBpsFor, disputeParts, refundParts, saleInputProblem, shareSale, splitSale, type FeePayer, type SaleSplit } from "./sale.ts";

const payer = fc.constantFrom<FeePayer>("platform", "creator", "split");
/** Any gross, any tax up to it, any basis points. */
const sharesArb = fc
  .integer({ min: 1, max: AMOUNT_MAX_CENTS })
  .chain((gross) => fc.record({ gross: fc.constant(gross), salesTax: fc.integer({ min: 0, max: gross }), bps: fc.integer({ min: 0, max: 10_000 }) }));
/** A sale a client may state: the fee fits within gross − tax. */
const statedSaleArb = sharesArb.chain((s) => fc.record({ s: fc.constant(s), fee: fc.integer({ min: 0, max: s.gross - s.salesTax }), payer }));

function expectWhole(split: SaleSplit): void {
  expect(split.creatorAmount + split.platformAmount + split.processingFee + split.salesTax).toBe(split.gross);
  expect(split.creatorShare + split.platformShare + split.salesTax).toBe(split.gross);
  expect(split.creatorFee + split.platformFee).toBe(split.processingFee);
  expect(split.net).toBe(split.creatorAmount + split.platformAmount);
  for (const part of [split.salesTax, split.creatorShare, split.platformShare, split.creatorFee, split.platformFee, split.creatorAmount]) {
    expect(part).toBeGreaterThanOrEqual(0);
  }
}

describe("shareSale", () => {
  it("parts always sum to the gross, the creator gets floor(net × bps), the remainder goes to the platform", () => {
    // Proves creator + platform + tax = gross for any amount, tax ≤ amount and bps, and the creator part is exact.
    fc.assert(
      fc.property(sharesArb, ({ gross, salesTax, bps }) => {
        const s = shareSale(cents(gross), cents(salesTax), bps);
        expect(s.creatorShare + s.platformShare + s.salesTax).toBe(gross);
        expect(s.creatorShare).toBe(Number((BigInt(gross - salesTax) * BigInt(bps)) / 10_000n));
        expect(s.platformShare).toBeGreaterThanOrEqual(0);
        // The platform never gets less than its own exact share.
        expect(BigInt(s.platformShare) * 10_000n >= BigInt(gross - salesTax) * BigInt(10_000 - bps)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("rounds percent to basis points and takes the default split when none is named", () => {
    // Proves 2.3 % is 230 bps (not 229), a participant's default applies, else 80 %, and the worked example.
    expect(creatorBpsFor(2.3, undefined)).toBe(230);
    expect(creatorBpsFor(2.3, 5000)).toBe(230);
    expect(creatorBpsFor(undefined, 7015)).toBe(7015);
    expect(creatorBpsFor(undefined, null)).toBe(8000);
    expect(shareSale(cents(1001), cents(0), 7000)).toMatchObject({ creatorShare: 700, platformShare: 301 });
  });

  it("refuses a tax above the gross or bps out of range rather than producing a negative share", () => {
    // Proves impossible shares throw instead of splitting.
    expect(() => shareSale(cents(100), cents(101), 5000)).toThrow(RangeError);
    expect(() => shareSale(cents(100), cents(0), 10_001)).toThrow(RangeError);
  });
});

describe("splitSale and chargeFee", () => {
  it("a stated sale splits whole for any amounts, percentages and fee payers", () => {
    // Proves record-sale's arithmetic: parts sum to the gross, none negative, the creator's part of the fee capped.
    fc.assert(
      fc.property(statedSaleArb, ({ s, fee, payer: paidBy }) => {
        expect(saleInputProblem(s.gross, s.salesTax, fee)).toBeUndefined();
        const split = splitSale({ gross: s.gross, salesTax: s.salesTax, processingFee: fee, feePaidBy: paidBy, creatorBps: s.bps });
        expectWhole(split);
        expect(split.creatorAmount + split.creatorFee).toBe(Number((BigInt(s.gross - s.salesTax) * BigInt(s.bps)) / 10_000n));
      }),
      { numRuns: 2000 },
    );
  });

  it("any fee a processor reports is charged whole: the creator bears what is asked up to its share, the platform the rest", () => {
    // Proves the fee policy for checkouts, whose payment happened: no fee is refused, and the creator never goes negative.
    fc.assert(
      fc.property(sharesArb, fc.integer({ min: 0, max: AMOUNT_MAX_CENTS }), payer, ({ gross, salesTax, bps }, fee, paidBy) => {
        const split = chargeFee(shareSale(cents(gross), cents(salesTax), bps), fee, paidBy);
        expectWhole(split);
        const asked = paidBy === "creator" ? fee : paidBy === "split" ? Math.floor(fee / 2) : 0;
        expect(split.creatorFee).toBe(Math.min(asked, split.creatorShare));
        if (asked > split.creatorShare) expect(split.creatorAmount).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it("charges fees as asked in the worked examples, and the platform bears what the creator's share cannot", () => {
    // Proves default 80/20, a split fee with tax taken off first, rounding to the platform, and the excess policy.
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
    expect(splitSale({ gross: 100, salesTax: 0, processingFee: 90, feePaidBy: "creator", creatorBps: 5000 })).toMatchObject({
      creatorFee: 50,
      platformFee: 40,
      creatorAmount: 0,
      platformAmount: 10,
    });
    // A platform-paid fee above the platform's share leaves the platform's net negative: it bears the fee.
    expect(splitSale({ gross: 100, salesTax: 0, processingFee: 30, feePaidBy: "platform", creatorBps: 9000 })).toMatchObject({
      creatorAmount: 90,
      platformAmount: -20,
    });
  });

  it("refuses stated amounts that cannot be split, by field", () => {
    // Proves the input checks record-sale, checkouts and spends answer with: tax above the gross, tax plus fee above it.
    expect(saleInputProblem(100, 101)).toMatchObject({ path: "sales_tax" });
    expect(saleInputProblem(100, 20, 81)).toMatchObject({ path: "processing_fee" });
    expect(saleInputProblem(100, 20, 80)).toBeUndefined();
    expect(() => chargeFee(shareSale(cents(100), cents(0), 5000), -1, "platform")).toThrow(RangeError);
  });
});

describe("disputeParts", () => {
  /** A sale as the ledger records it: gross and the creator's amount after the fee. */
  const recordedArb = fc
    .tuple(sharesArb, fc.integer({ min: 0, max: AMOUNT_MAX_CENTS }), payer)
    .map(([{ gross, salesTax, bps }, fee, paidBy]) => chargeFee(shareSale(cents(gross), cents(salesTax), bps), fee, paidBy));

  it("sums to the disputed amount, never takes more from a side than it has, and matches a first refund of it", () => {
    // Proves the dispute hold: creator + platform = disputed (at most the gross), and losing takes the same back.
    fc.assert(
      fc.property(recordedArb, fc.integer({ min: 0, max: AMOUNT_MAX_CENTS }), (split, reported) => {
        const d = disputeParts({ gross: split.gross, creatorAmount: split.creatorAmount }, reported);
        expect(d.amount).toBe(Math.min(reported, split.gross));
        expect(d.fromCreator + d.fromPlatform).toBe(d.amount);
        expect(d.fromCreator).toBeGreaterThanOrEqual(0);
        expect(d.fromCreator).toBeLessThanOrEqual(split.creatorAmount);
        expect(d.fromPlatform).toBeGreaterThanOrEqual(0);
        expect(d.fromPlatform).toBeLessThanOrEqual(split.gross - split.creatorAmount);
        if (d.amount === split.gross) expect(d.fromCreator).toBe(split.creatorAmount);
        if (d.amount === 0) return;
        const state = {
          saleReference: "s",
          gross: split.gross,
          creatorAmount: split.creatorAmount,
          salesTax: split.salesTax,
          refundedAmount: cents(0),
          creatorRefunded: cents(0),
          platformRefunded: cents(0),
          reversed: false,
        };
        const refund = refundParts(state, d.amount, "both");
        if (refund instanceof DomainError) throw refund;
        expect(refund.fromCreator).toBe(d.fromCreator);
      }),
      { numRuns: 2000 },
    );
  });

  it("prorates the worked example and refuses a negative report", () => {
    // Proves floor(creator × disputed / gross) exactly, a report above the gross capped, and bad input refused.
    expect(disputeParts({ gross: 10_000, creatorAmount: 7_850 }, 3_333)).toEqual({ amount: 3_333, fromCreator: 2_616, fromPlatform: 717 });
    expect(disputeParts({ gross: 10_000, creatorAmount: 7_850 }, 20_000)).toEqual({ amount: 10_000, fromCreator: 7_850, fromPlatform: 2_150 });
    expect(() => disputeParts({ gross: 100, creatorAmount: 80 }, -1)).toThrow(RangeError);
  });
});
