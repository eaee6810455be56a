/**
 * The tax API (wire-decisions §10): W-9 tax profiles, the year's calculations from the ledger, settings per org,
 * environment and year, 1099 documents with their recipient copy and the year's export (CSV, JSON, IRS FIRE).
 */
import { z } from "zod";
import { str } from "./common.ts";
import { pagingInt } from "./common.ts";

export const TIN_TYPES = ["ssn", "ein", "itin"] as const;
export type TinType = (typeof TIN_TYPES)[number];
export const TAX_FORMS = ["1099-K", "1099-NEC"] as const;
export type TaxForm = (typeof TAX_FORMS)[number];
export const TAX_DOCUMENT_STATUSES = ["draft", "filed", "corrected"] as const;
export type TaxDocumentStatus = (typeof TAX_DOCUMENT_STATUSES)[number];
export const BUSINESS_TYPES = ["individual", "sole_proprietor", "llc", "corporation", "partnership", "nonprofit"] as const;
export const EXPORT_FORMATS = ["csv", "json", "fire"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The first tax year the service reports on; later than the ledger's oldest data can be. */
export const TAX_YEAR_MIN = 2000;

const invalidTin = { params: { error_code: "invalid_tin" } };
const invalidYear = { params: { error_code: "invalid_tax_year" } };

/**
 * A TIN as the W-9 shows it: 9 digits, with or without the usual dashes (SSN/ITIN 123-45-6789, EIN 12-3456789).
 * The area, group and prefix rules are checked by the tax service (domain/tin.ts), which knows the TIN's type.
 * Messages never carry the value.
 */
export const Tin = z
  .string({ error: "must be a string" })
  .max(11)
  .refine((s) => /^(\d{9}|\d{3}-\d{2}-\d{4}|\d{2}-\d{7})$/.test(s), {
    message: "must be 9 digits (dashes allowed as 123-45-6789 or 12-3456789)",
    ...invalidTin,
  });

export const TaxYear = z.coerce
  .number({ error: "must be a year" })
  .refine((n) => Number.isInteger(n) && n >= TAX_YEAR_MIN && n <= 9999, { message: `must be a year from ${TAX_YEAR_MIN}`, ...invalidYear });

export const TaxAddress = z.strictObject({
  line1: str(40).min(1),
  line2: str(40).optional(),
  city: str(40).min(1),
  state: z.string({ error: "must be a string" }).regex(/^[A-Z]{2}$/, { message: "must be a two-letter state code" }),
  postal_code: z.string({ error: "must be a string" }).regex(/^\d{5}(-?\d{4})?$/, { message: "must be a ZIP code (12345 or 12345-6789)" }),
  country: z.literal("US", { error: "must be US (a W-9 is for US persons)" }).default("US"),
});
export type TaxAddress = z.output<typeof TaxAddress>;

/** PUT /v1/participants/{id}/tax-profile: the W-9. The one place a full TIN is accepted. */
export const TaxProfileBody = z.strictObject({
  legal_name: str(80).min(1),
  business_name: str(80).optional(),
  tin_type: z.enum(TIN_TYPES),
  tin: Tin,
  business_type: z.enum(BUSINESS_TYPES).optional(),
  address: TaxAddress,
  certified: z.literal(true, { error: "must be true: the payee certifies the W-9" }),
  /** Who certified (a user of the platform); the key's id when absent. */
  certified_by: str(200).optional(),
});
export type TaxProfileBody = z.output<typeof TaxProfileBody>;

export const TaxYearQuery = z.object({ tax_year: TaxYear });
/** A calculation's year: the current one (on the tenant's clock) when absent. */
export const TaxCalculationQuery = z.object({ tax_year: TaxYear.optional() });

export const TaxSettingsBody = z.strictObject({
  tax_year: TaxYear,
  form: z.enum(TAX_FORMS),
  /** The gross a participant must exceed (1099-K) or reach (1099-NEC); the year's federal figure when absent. */
  threshold_cents: z.number().int().nonnegative().max(100_000_000_000).optional(),
  /** 1099-K only: the number of payment transactions a participant must exceed as well. */
  threshold_transactions: z.number().int().nonnegative().max(1_000_000).optional(),
});
export type TaxSettingsBody = z.output<typeof TaxSettingsBody>;

export const GenerateTaxDocumentsBody = z.strictObject({ tax_year: TaxYear });

export const ListTaxDocumentsQuery = z.object({
  tax_year: TaxYear.optional(),
  status: z.enum(TAX_DOCUMENT_STATUSES).optional(),
  participant_id: str(100).optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000).optional(),
});

export const GetTaxDocumentQuery = z.object({ include: z.enum(["sources"]).optional() });

export const ExportTaxDocumentsQuery = z.object({ tax_year: TaxYear, format: z.enum(EXPORT_FORMATS).default("json") });
/** POST /v1/tax/exports: a year's export of any size, as a job cut into parts (ADR 0022). */
export const CreateTaxExportBody = z.strictObject({ tax_year: TaxYear, format: z.enum(EXPORT_FORMATS) });
export const TaxExportPartParams = z.object({ part: z.coerce.number({ error: "must be a number" }).int().min(1).max(100_000) });

/** POST …/correct: the figures are read from the ledger again; `reason` is kept with the corrected document. */
export const CorrectTaxDocumentBody = z.strictObject({ reason: str(500).optional() });
