/**
 * Which form applies and when a participant meets its threshold, per org, environment and tax year. The defaults
 * are the federal figures (sources in docs/api.md, Tax):
 * - 1099-K (payment settlement, IRC §6050W(e) as amended by P.L. 119-21, the One Big Beautiful Bill Act, July 2025,
 *   retroactively from 2022): gross payments over $20,000 AND more than 200 transactions;
 * - 1099-NEC (IRC §6041(a)): $600 or more through 2025; $2,000 or more for payments after December 31, 2025
 *   (P.L. 119-21 §70433). From 2027 the IRS indexes $2,000 for inflation: an org sets the year's figure.
 */
import type { schemas } from "@treasury/contracts";

export interface TaxSettings {
  taxYear: number;
  form: schemas.TaxForm;
  thresholdCents: number;
  /** 1099-K only: transactions the participant must exceed as well; null for 1099-NEC. */
  thresholdTransactions: number | null;
  /** True when the org set them; false for the federal defaults. */
  custom: boolean;
}

export const FEDERAL_1099K_CENTS = 2_000_000;
export const FEDERAL_1099K_TRANSACTIONS = 200;
export const NEC_CENTS_THROUGH_2025 = 60_000;
export const NEC_CENTS_FROM_2026 = 200_000;

/** The federal defaults of a year and form (1099-K unless the org chose otherwise). */
export function federalSettings(taxYear: number, form: schemas.TaxForm = "1099-K"): TaxSettings {
  if (form === "1099-NEC") {
    return { taxYear, form, thresholdCents: taxYear <= 2025 ? NEC_CENTS_THROUGH_2025 : NEC_CENTS_FROM_2026, thresholdTransactions: null, custom: false };
  }
  return { taxYear, form, thresholdCents: FEDERAL_1099K_CENTS, thresholdTransactions: FEDERAL_1099K_TRANSACTIONS, custom: false };
}

/**
 * 1099-K: more than the amount and more than the transactions (both, as §6050W(e) says); 1099-NEC: at least the
 * amount of what was paid (gross less refunds).
 */
export function meetsThreshold(s: TaxSettings, grossCents: number, refundsCents: number, transactions: number): boolean {
  if (s.form === "1099-NEC") return grossCents - refundsCents >= s.thresholdCents && grossCents - refundsCents > 0;
  return grossCents > s.thresholdCents && transactions > (s.thresholdTransactions ?? 0);
}

export function presentSettings(s: TaxSettings) {
  return {
    tax_year: s.taxYear,
    form: s.form,
    threshold_cents: s.thresholdCents,
    threshold_transactions: s.thresholdTransactions,
    source: s.custom ? "org" : "federal_default",
  };
}
