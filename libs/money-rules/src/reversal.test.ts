// Proves the reversal arithmetic: the amount a reversal takes is bounded by what remains, each part is taken back by
// its cumulative share (any sequence of partial reversals ends exactly where one full reversal does, to the cent),
// and a sale's sides always sum to what is taken back, within each side, whatever refunds came before.
import fc from "fast-check";
import { AMOUNT_MAX_CENTS, cents, DomainError, type RefundFrom } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { refundParts, reversalAmount, reversalShare, reversalSides, type SaleState } from "./sale.ts";

/** A total and cut points in it: the reversed-so-far figures of a sequence of partial reversals ending in a full one. */
const cutsArb = fc
  .integer({ min: 1, max: AMOUNT_MAX_CENTS })
  .chain((total) =>
    fc
      .uniqueArray(fc.integer({ min: 1, max: Math.max(1, total - 1) }), { maxLength: Math.min(20, total - 1) })
      .map((cuts) => ({ total, steps: [...cuts.filter((c) => c < total).sort((a, b) => a - b), total] })),
  );

/** A sale (gross, creator side) and some refunds already taken from it, of any modes (as the ledger's row keeps them). */
const refundedSaleArb = fc
  .record({
    gross: fc.integer({ min: 1, max: 10_000_000 }),
    creatorBps: fc.integer({ min: 0, max: 10_000 }),
    refunds: fc.array(fc.record({ size: fc.integer({ min: 1, max: 1_000_000 }), mode: fc.constantFrom<RefundFrom>("both", "creator_only", "platform_only") }), {
      maxLength: 6,
    }),
  })
  .map(({ gross, creatorBps, refunds }) => {
    let s: SaleState = {
      saleReference: "s",
      gross: cents(gross),
      creatorAmount: cents(Math.floor((gross * creatorBps) / 10_000)),
      salesTax: cents(0),
      refundedAmount: cents(0),
      creatorRefunded: cents(0),
      platformRefunded: cents(0),
      reversed: false,
    };
    for (const r of refunds) {
      const p = refundParts(s, r.size, r.mode);
      if (p instanceof DomainError) continue;
      s = {
        ...s,
        refundedAmount: cents(s.refundedAmount + p.amount),
        creatorRefunded: cents(s.creatorRefunded + p.fromCreator),
        platformRefunded: cents(s.platformRefunded + p.fromPlatform),
      };
    }
    return s;
  });

describe("reversalAmount", () => {
  it("is what remains by default, and refuses more than remains with the remaining amount", () => {
    expect(reversalAmount(1_000, 300, undefined)).toBe(700);
    expect(reversalAmount(1_000, 300, 250)).toBe(250);
    const over = reversalAmount(1_000, 300, 701) as DomainError;
    expect([over.code, over.extra?.["remaining_amount"]]).toEqual(["reversal_amount_exceeds_remaining", 700]);
    const none = reversalAmount(1_000, 1_000, undefined) as DomainError;
    expect([none.code, none.extra?.["remaining_amount"]]).toEqual(["reversal_amount_exceeds_remaining", 0]);
    expect((reversalAmount(0, 0, undefined) as DomainError).code).toBe("reversal_amount_exceeds_remaining");
  });

  it("for any total, anything taken so far and any partial amount: within what remains, else refused", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: AMOUNT_MAX_CENTS }).chain((total) =>
          fc.record({
            total: fc.constant(total),
            before: fc.integer({ min: 0, max: total }),
            partial: fc.option(fc.integer({ min: 1, max: AMOUNT_MAX_CENTS }), { nil: undefined }),
          }),
        ),
        ({ total, before, partial }) => {
          const a = reversalAmount(total, before, partial);
          const remaining = total - before;
          if (a instanceof DomainError) {
            expect(a.code).toBe("reversal_amount_exceeds_remaining");
            expect(remaining === 0 || (partial !== undefined && partial > remaining)).toBe(true);
          } else {
            expect(a).toBe(partial ?? remaining);
            expect(a).toBeGreaterThan(0);
            expect(a).toBeLessThanOrEqual(remaining);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("reversalShare", () => {
  it("any sequence of partial reversals takes each part back exactly once, never more than it, never less than 0", () => {
    // Proves the cumulative rule for postings: the shares of every step sum to the part, for any parts of a total.
    fc.assert(
      fc.property(
        cutsArb.chain(({ total, steps }) =>
          fc.record({
            total: fc.constant(total),
            steps: fc.constant(steps),
            parts: fc.array(fc.integer({ min: 0, max: total }), { minLength: 1, maxLength: 6 }),
          }),
        ),
        ({ total, steps, parts }) => {
          for (const part of parts) {
            let before = 0;
            let taken = 0;
            for (const after of steps) {
              const share = reversalShare(part, total, before, after);
              expect(share).toBeGreaterThanOrEqual(0);
              taken += share;
              expect(taken).toBeLessThanOrEqual(part);
              before = after;
            }
            expect(taken).toBe(part);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("takes the floor of the cumulative share: 1/3 of 100 three times is 33, 33, 34", () => {
    expect([reversalShare(100, 3, 0, 1), reversalShare(100, 3, 1, 2), reversalShare(100, 3, 2, 3)]).toEqual([33, 33, 34]);
  });
});

describe("reversalSides", () => {
  it("sides sum to what is taken back, stay within each side, and a full reversal gives each side back whole", () => {
    // Proves it for any sale, after any refunds of any modes, reversed in any number of partial steps.
    fc.assert(
      fc.property(
        refundedSaleArb.chain((s) =>
          fc
            .uniqueArray(fc.integer({ min: s.refundedAmount + 1, max: Math.max(s.refundedAmount + 1, s.gross - 1) }), { maxLength: 8 })
            .map((cuts) => ({ s, steps: [...cuts.filter((c) => c < s.gross).sort((a, b) => a - b), s.gross as number] })),
        ),
        ({ s, steps }) => {
          const platformTotal = s.gross - s.creatorAmount;
          let sides = { creatorRefunded: s.creatorRefunded as number, platformRefunded: s.platformRefunded as number };
          let before = s.refundedAmount as number;
          for (const after of steps) {
            if (after <= before) continue;
            const next = reversalSides({ creatorAmount: s.creatorAmount, creatorRefunded: sides.creatorRefunded }, s.gross, before, after);
            expect(next.creatorRefunded + next.platformRefunded).toBe(after);
            expect(next.creatorRefunded).toBeGreaterThanOrEqual(sides.creatorRefunded);
            expect(next.creatorRefunded).toBeLessThanOrEqual(s.creatorAmount);
            expect(next.platformRefunded).toBeGreaterThanOrEqual(0);
            expect(next.platformRefunded).toBeLessThanOrEqual(platformTotal);
            sides = next;
            before = after;
          }
          expect(sides).toEqual({ creatorRefunded: s.creatorAmount, platformRefunded: platformTotal });
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("a partial reversal of an untouched sale takes the creator's cumulative share", () => {
    expect(reversalSides({ creatorAmount: 7_000, creatorRefunded: 0 }, 10_000, 0, 2_500)).toEqual({ creatorRefunded: 1_750, platformRefunded: 750 });
  });
});
