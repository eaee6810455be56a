/**
 * Revenue split of a sale, in integer basis points: the creator gets floor((gross − sales tax) × bps / 10000),
 * the platform the remainder, the tax authority the sales tax. The three parts always sum to the gross.
 */
import { cents, percentToBps, shareOf, subCents, type Cents } from "@treasury/contracts";

/** Creator share when neither the request nor the participant names one (docs/api.md, Participants and wallets). */
export const DEFAULT_CREATOR_PERCENT = 80;

export interface Split {
  gross: Cents;
  salesTax: Cents;
  creator: Cents;
  platform: Cents;
  creatorBps: number;
}

/** Throws RangeError on a tax above the gross or bps outside 0–10000: callers validate input first. */
export function computeSplit(gross: Cents, salesTax: Cents, creatorBps: number): Split {
  if (salesTax > gross) throw new RangeError(`sales tax ${salesTax} exceeds gross ${gross}`);
  if (!Number.isInteger(creatorBps) || creatorBps < 0 || creatorBps > 10_000) throw new RangeError(`bps out of range: ${creatorBps}`);
  const net = subCents(gross, salesTax);
  const creator = shareOf(net, creatorBps);
  const platform = subCents(net, creator);
  const split = { gross, salesTax, creator, platform, creatorBps };
  // A split that does not add up is a bug, never a client error.
  if (creator + platform + salesTax !== gross || platform < 0) throw new Error(`split invariant broken: ${JSON.stringify(split)}`);
  return split;
}

/** The creator percent that applies: the request's, else the participant's default, else 80. */
export function creatorBpsFor(requestPercent: number | undefined, participantDefault: number | null | undefined): number {
  return percentToBps(requestPercent ?? participantDefault ?? DEFAULT_CREATOR_PERCENT);
}

export function breakdownOf(s: { amount: number; sales_tax: number; creator_amount: number; platform_amount: number; creator_bps: number }) {
  return {
    gross_amount_cents: s.amount,
    sales_tax_amount_cents: s.sales_tax,
    creator_amount_cents: s.creator_amount,
    platform_amount_cents: s.platform_amount,
    creator_percent: s.creator_bps / 100,
  };
}

export { cents };
