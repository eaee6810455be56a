/**
 * What the tax service asks the ledger: a tax year's figures per participant, and the transactions behind one
 * participant's figures. Accounting time is each transaction's effective date (else the time it was posted), so
 * the figures are the ledger as of the year's end. Not part of the public API.
 */
import { z } from "zod";
import { ParticipantId } from "../../ids.ts";
import { InternalScope } from "./scope.ts";

/** Participants per page of figures: a page stays far below NATS's 1 MiB payload. */
export const TAX_FIGURES_PAGE_MAX = 2_000;
export const TAX_SOURCES_PAGE_MAX = 1_000;

const sum = z.number().int().refine(Number.isSafeInteger);

/**
 * `svc.ledger.internal.taxFigures`: with `participant_ids`, those participants' figures (zeros when they had no
 * activity; ids the ledger does not know are listed in `unknown_participant_ids`); without, every participant
 * with activity in the year, in participant_id order after `after`, `limit` at a time (`next_after` pages on).
 */
export const TAX_FIGURES_OPERATION = "internal.taxFigures";
export const TaxFiguresRequest = z.object({
  ...InternalScope,
  tax_year: z.number().int().min(2000).max(9999),
  participant_ids: z.array(ParticipantId).max(TAX_FIGURES_PAGE_MAX).optional(),
  after: ParticipantId.optional(),
  limit: z.number().int().min(1).max(TAX_FIGURES_PAGE_MAX).default(1_000),
});
export type TaxFiguresRequest = z.input<typeof TaxFiguresRequest>;
export const TaxFigures = z.object({
  participant_id: ParticipantId,
  /** Gross amounts of the participant's sales whose accounting time is in the year. */
  gross_cents: sum.nonnegative(),
  /** Refunds and sale reversals in the year, less refunds reversed in the year. */
  refunds_cents: sum,
  /** The sales counted in gross_cents (payment transactions). */
  transaction_count: z.number().int().nonnegative(),
  /** gross_cents by calendar month (UTC), January first. */
  monthly_cents: z.array(sum.nonnegative()).length(12),
});
export type TaxFigures = z.infer<typeof TaxFigures>;
export const TaxFiguresAnswer = z.object({
  figures: z.array(TaxFigures),
  next_after: ParticipantId.nullable(),
  unknown_participant_ids: z.array(ParticipantId).default([]),
});
export type TaxFiguresAnswer = z.infer<typeof TaxFiguresAnswer>;

/**
 * `svc.ledger.internal.taxSources`: the transactions behind one participant's figures in a year, in transaction id
 * order (`after` pages on). Sales' amounts sum to gross_cents; refunds' signed amounts to refunds_cents.
 */
export const TAX_SOURCES_OPERATION = "internal.taxSources";
export const TaxSourcesRequest = z.object({
  ...InternalScope,
  tax_year: z.number().int().min(2000).max(9999),
  participant_id: ParticipantId,
  /** The last transaction id of the previous page. */
  after: z.string().max(100).optional(),
  limit: z.number().int().min(1).max(TAX_SOURCES_PAGE_MAX).default(TAX_SOURCES_PAGE_MAX),
});
export type TaxSourcesRequest = z.input<typeof TaxSourcesRequest>;
export const TaxSource = z.object({
  transaction_id: z.string(),
  kind: z.string(),
  /** `sale` counts in gross; `refund` (a refund or a sale's reversal, positive; a refund's reversal, negative) in refunds. */
  role: z.enum(["sale", "refund"]),
  amount_cents: sum,
  accounted_at: z.string(),
});
export type TaxSource = z.infer<typeof TaxSource>;
export const TaxSourcesAnswer = z.object({ sources: z.array(TaxSource), next_after: z.string().nullable() });
export type TaxSourcesAnswer = z.infer<typeof TaxSourcesAnswer>;

/**
 * `svc.tax.internal.taxProfileStatus`: whether a participant has a certified W-9 with the tax service (payout
 * eligibility's tax certification, beside the KYC submission's). Answer: `{tax_profile: {certified, certified_at}}`,
 * `certified: false` and `certified_at: null` without a profile. Never the TIN.
 */
export const TAX_PROFILE_STATUS_OPERATION = "internal.taxProfileStatus";
export const TaxProfileStatusRequest = z.object({ ...InternalScope, participant_id: ParticipantId });
export type TaxProfileStatusRequest = z.infer<typeof TaxProfileStatusRequest>;
export const TaxProfileStatus = z.object({ certified: z.boolean(), certified_at: z.string().nullable() });
export type TaxProfileStatus = z.infer<typeof TaxProfileStatus>;
