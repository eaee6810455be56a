/**
 * The split of a sale (pure): creator = floor((gross − sales_tax) × bps / 10000), the platform gets the rest;
 * the processing fee is then charged to the platform, the creator, or split (creator floor(fee / 2), platform the
 * rest). Parts always sum to the gross: creator_amount + platform_amount + processing_fee + sales_tax = gross.
 */
import { cents, shareOf, type Cents } from "@treasury/contracts";

export type FeePayer = "platform" | "creator" | "split";

/** The split when neither the request nor the participant names one. */
export const DEFAULT_CREATOR_BPS = 8000;

export interface SaleInput {
  gross: number;
  salesTax: number;
  processingFee: number;
  feePaidBy: FeePayer;
  creatorBps: number;
}

export interface SaleSplit {
  gross: Cents;
  salesTax: Cents;
  processingFee: Cents;
  /** gross − sales_tax − processing_fee: what creator and platform share between them. */
  net: Cents;
  creatorAmount: Cents;
  platformAmount: Cents;
  /** The part of the fee the creator pays (platform revenue recovers it; the platform books the whole fee). */
  creatorFee: Cents;
  creatorBps: number;
}

export type SplitProblem = { path: "sales_tax" | "processing_fee"; message: string };

export function splitSale(input: SaleInput): SaleSplit | SplitProblem {
  const { gross, salesTax, processingFee: fee, creatorBps } = input;
  if (salesTax > gross) return { path: "sales_tax", message: "must not exceed amount" };
  if (salesTax + fee > gross) return { path: "processing_fee", message: "processing_fee plus sales_tax must not exceed amount" };
  const base = cents(gross - salesTax);
  const creatorShare = shareOf(base, creatorBps);
  const creatorFee = input.feePaidBy === "creator" ? fee : input.feePaidBy === "split" ? Math.floor(fee / 2) : 0;
  if (creatorFee > creatorShare) return { path: "processing_fee", message: "the creator's part of processing_fee exceeds the creator's share" };
  const creatorAmount = cents(creatorShare - creatorFee);
  const platformAmount = cents(base - creatorShare - (fee - creatorFee));
  const split: SaleSplit = {
    gross: cents(gross),
    salesTax: cents(salesTax),
    processingFee: cents(fee),
    net: cents(gross - salesTax - fee),
    creatorAmount,
    platformAmount,
    creatorFee: cents(creatorFee),
    creatorBps,
  };
  if (split.creatorAmount + split.platformAmount + split.processingFee + split.salesTax !== split.gross) {
    throw new Error(`sale split does not sum to the gross: ${JSON.stringify(split)}`);
  }
  return split;
}
