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

export type FeePayer = "platform" | "creator" | "split";

export interface FeeSplit {
  /** The creator's share after its part of the fee. */
  creator: number;
  /** The platform's share after its part of the fee (negative when the fee exceeds it: the platform bears it). */
  platform: number;
  fee: number;
  /** The part of the fee the creator bears (platform revenue recovers it; the platform books the whole fee). */
  creatorFee: number;
}

/**
 * A sale's split once the processor's fee is known, charged as record-sale charges it (docs/api.md, record-sale):
 * to the platform, to the creator, or split (creator floor(fee / 2), platform the rest). Unlike record-sale, the
 * payment has already happened and cannot be refused: a creator's part of the fee above the creator's share is
 * borne by the platform instead. creator + platform + fee + sales tax = gross, always.
 */
export function withProcessingFee(
  s: { amount: number; sales_tax: number; creator_amount: number; platform_amount: number },
  fee: number,
  paidBy: FeePayer,
): FeeSplit {
  if (!Number.isSafeInteger(fee) || fee < 0) throw new RangeError(`processing fee out of range: ${fee}`);
  const asked = paidBy === "creator" ? fee : paidBy === "split" ? Math.floor(fee / 2) : 0;
  const creatorFee = Math.min(asked, s.creator_amount);
  const out = { creator: s.creator_amount - creatorFee, platform: s.platform_amount - (fee - creatorFee), fee, creatorFee };
  if (out.creator + out.platform + out.fee + s.sales_tax !== s.amount) throw new Error(`fee split invariant broken: ${JSON.stringify(out)}`);
  return out;
}

export function breakdownOf(s: {
  amount: number;
  sales_tax: number;
  creator_amount: number;
  platform_amount: number;
  creator_bps: number;
  processing_fee: number;
  processing_fee_paid_by: FeePayer;
}) {
  const f = withProcessingFee(s, s.processing_fee, s.processing_fee_paid_by);
  return {
    gross_amount_cents: s.amount,
    sales_tax_amount_cents: s.sales_tax,
    creator_amount_cents: f.creator,
    platform_amount_cents: f.platform,
    creator_percent: s.creator_bps / 100,
    // Only a payment the card processor took has a fee; the fields appear once it is known.
    ...(f.fee > 0 ? { processing_fee_cents: f.fee, processing_fee_paid_by: s.processing_fee_paid_by } : {}),
  };
}

export { cents };
