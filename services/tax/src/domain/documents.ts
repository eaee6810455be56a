/**
 * A participant's year (the calculation) and the 1099 document made from it. Amounts are the ledger's figures to
 * the cent: 1099-K box 1a is the gross of the payment transactions (before refunds and fees, as the form asks),
 * box 3 their number, boxes 5a–5l the gross by month; 1099-NEC box 1 is what was paid, gross less refunds.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { meetsThreshold, type TaxSettings } from "./thresholds.ts";

export type ProfileStatus = "certified" | "missing";

export interface Figures {
  participantId: string;
  grossCents: number;
  refundsCents: number;
  transactionCount: number;
  monthlyCents: number[];
}

export interface Calculation extends Figures {
  taxYear: number;
  form: schemas.TaxForm | "none";
  meetsThreshold: boolean;
  profileStatus: ProfileStatus;
}

export interface TaxDocument extends Figures {
  id: string;
  tenant: Tenant;
  taxYear: number;
  form: schemas.TaxForm;
  status: schemas.TaxDocumentStatus;
  recipientTinLast4: string | null;
  corrects: string | null;
  correctedBy: string | null;
  correctionReason: string | null;
  filedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export function calculate(taxYear: number, f: Figures, s: TaxSettings, profileStatus: ProfileStatus): Calculation {
  const meets = meetsThreshold(s, f.grossCents, f.refundsCents, f.transactionCount);
  return { ...f, taxYear, form: meets ? s.form : "none", meetsThreshold: meets, profileStatus };
}

export function presentCalculation(c: Calculation) {
  return {
    participant_id: c.participantId,
    tax_year: c.taxYear,
    gross_payments_cents: c.grossCents,
    refunds_cents: c.refundsCents,
    transaction_count: c.transactionCount,
    monthly_cents: c.monthlyCents,
    form: c.form,
    meets_threshold: c.meetsThreshold,
    profile_status: c.profileStatus,
  };
}

/** The boxes of the document's form, in cents (box 3 of a 1099-K is a count). */
export function amountsOf(d: Pick<TaxDocument, "form" | "grossCents" | "refundsCents" | "transactionCount" | "monthlyCents">) {
  if (d.form === "1099-NEC") return { box_1_cents: d.grossCents - d.refundsCents, gross_payments_cents: d.grossCents, refunds_cents: d.refundsCents };
  return {
    box_1a_cents: d.grossCents,
    box_3_transactions: d.transactionCount,
    box_5_cents: d.monthlyCents,
    gross_payments_cents: d.grossCents,
    refunds_cents: d.refundsCents,
  };
}

/** The amount the IRS file and the summaries total: box 1a (1099-K) or box 1 (1099-NEC). */
export function reportedCents(d: Pick<TaxDocument, "form" | "grossCents" | "refundsCents">): number {
  return d.form === "1099-NEC" ? d.grossCents - d.refundsCents : d.grossCents;
}

export function presentDocument(d: TaxDocument) {
  return {
    id: d.id,
    tax_year: d.taxYear,
    participant_id: d.participantId,
    form: d.form,
    status: d.status,
    amounts: amountsOf(d),
    transaction_count: d.transactionCount,
    recipient_tin_last4: d.recipientTinLast4,
    corrects_document_id: d.corrects,
    corrected_by_document_id: d.correctedBy,
    correction_reason: d.correctionReason,
    filed_at: d.filedAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
  };
}

/** Figures that differ: a draft is updated (and its event written) only then. */
export function sameFigures(a: Figures, b: Figures): boolean {
  return (
    a.grossCents === b.grossCents &&
    a.refundsCents === b.refundsCents &&
    a.transactionCount === b.transactionCount &&
    a.monthlyCents.every((m, i) => m === b.monthlyCents[i])
  );
}
