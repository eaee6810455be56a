import { z } from "zod";

/** The largest amount any single operation may move (docs/api.md, Conventions). */
export const AMOUNT_MAX_CENTS = 100_000_000_000;

declare const centsBrand: unique symbol;
/** An integer number of cents, checked to be a safe integer. Built only by `cents()` / `parseCents()`. */
export type Cents = number & { readonly [centsBrand]: true };

export function cents(value: number): Cents {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a safe integer number of cents: ${value}`);
  return value as Cents;
}

/** Parse a value from the database (postgres.js returns int8/numeric as strings) into Cents, once. */
export function parseCents(value: string | number | bigint): Cents {
  const n = typeof value === "string" ? Number(value) : Number(value);
  if (typeof value === "string" && !/^-?\d+$/.test(value)) throw new RangeError(`not an integer: ${value}`);
  return cents(n);
}

export function addCents(a: Cents, b: Cents): Cents {
  return cents(a + b);
}

export function subCents(a: Cents, b: Cents): Cents {
  return cents(a - b);
}

/**
 * Percent with at most two decimals → integer basis points, rounding `percent × 100` (2.3 × 100 is
 * 229.99… in floating point, and flooring it would lose a basis point).
 */
export function percentToBps(percent: number): number {
  const bps = Math.round(percent * 100);
  if (!Number.isSafeInteger(bps) || bps < 0 || bps > 10_000) throw new RangeError(`percent out of range: ${percent}`);
  return bps;
}

/** floor(amount × bps / 10000) in exact integer arithmetic. */
export function shareOf(amount: Cents, bps: number): Cents {
  return cents(Number((BigInt(amount) * BigInt(bps)) / 10_000n));
}

/** True when a number has at most two decimals (percentages). */
export function hasAtMostTwoDecimals(n: number): boolean {
  return Math.abs(Math.round(n * 100) - n * 100) < 1e-6;
}

const amountTooLarge = { message: `must be at most ${AMOUNT_MAX_CENTS} cents`, params: { error_code: "amount_too_large" } };

/** A positive integer amount of cents, at most AMOUNT_MAX_CENTS (larger → error_code amount_too_large). */
export const PositiveCents = z
  .number({ error: "must be an integer number of cents" })
  .int({ error: "must be an integer number of cents" })
  .positive({ error: "must be a positive amount of cents" })
  .refine((v) => v <= AMOUNT_MAX_CENTS, amountTooLarge);

/** Zero or more cents (fees, taxes), same ceiling. */
export const NonNegativeCents = z
  .number({ error: "must be an integer number of cents" })
  .int({ error: "must be an integer number of cents" })
  .nonnegative({ error: "must not be negative" })
  .refine((v) => v <= AMOUNT_MAX_CENTS, amountTooLarge);

/** Signed cents (adjustments), same ceiling on the magnitude. */
export const SignedCents = z
  .number({ error: "must be an integer number of cents" })
  .int({ error: "must be an integer number of cents" })
  .refine((v) => Math.abs(v) <= AMOUNT_MAX_CENTS, amountTooLarge);

/** A percentage 0–100 with at most two decimals. */
export const Percent = z.number({ error: "must be a number" }).min(0).max(100).refine(hasAtMostTwoDecimals, { message: "at most two decimals" });
