/** Business and creator verification: the bodies and answers of the KYC operations (docs/api.md, KYC). */
import { z } from "zod";
import { bool, email, Metadata, str, url } from "./common.ts";

const businessTypes = ["individual", "sole_proprietor", "llc", "corporation", "partnership", "nonprofit"] as const;
const taxIdTypes = ["ssn", "ein", "itin"] as const;
export const DOCUMENT_TYPES = [
  "government_id",
  "proof_of_address",
  "w9",
  "ein_letter",
  "articles_of_incorporation",
  "beneficial_owner_id",
  "processor_verification",
  "other",
] as const;
export const KYC_STATUSES = ["pending", "under_review", "approved", "rejected", "suspended"] as const;
export const KycStatus = z.enum(KYC_STATUSES);
export type KycStatus = z.infer<typeof KycStatus>;

/**
 * A full SSN, EIN or ITIN: nine digits, bare or in the usual dashed forms. Only `tax_id_last4` may carry a tax
 * id, so any other string of a KYC body holding one is refused (the platform must never store it).
 */
export const FULL_TAX_ID_RE = /(?<!\d)(?:\d{3}-\d{2}-\d{4}|\d{2}-\d{7}|\d{9})(?!\d)/;
const FULL_TAX_ID_MESSAGE = "must not contain a full tax id (SSN/EIN/ITIN); send its last four digits as tax_id_last4";
const TAX_ID_SCAN_DEPTH_MAX = 32;

/** Adds an issue at each string (value or key) under `value` that holds a full tax id; never echoes the value. */
function refuseFullTaxIds(value: unknown, path: PropertyKey[], ctx: z.RefinementCtx, depth = 0): void {
  if (typeof value === "string") {
    if (FULL_TAX_ID_RE.test(value)) ctx.addIssue({ code: "custom", path, message: FULL_TAX_ID_MESSAGE });
    return;
  }
  if (depth > TAX_ID_SCAN_DEPTH_MAX || value === null || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value)) {
    const at = [...path, Array.isArray(value) ? Number(k) : k];
    if (!Array.isArray(value) && FULL_TAX_ID_RE.test(k)) ctx.addIssue({ code: "custom", path: at, message: FULL_TAX_ID_MESSAGE });
    refuseFullTaxIds(v, at, ctx, depth + 1);
  }
}

/** A calendar date `YYYY-MM-DD` that exists, from 1900-01-01 up to today (UTC). */
const birthDate = z
  .string({ error: "must be a string" })
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
  .refine(
    (s) => {
      const d = new Date(`${s}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
    },
    { message: "must be a calendar date" },
  )
  .refine((s) => s >= "1900-01-01" && s <= new Date().toISOString().slice(0, 10), { message: "must be a date from 1900-01-01 to today" });
const httpUrl = url.refine((u) => /^https?:\/\//i.test(u), { message: "must be an http(s) URL" });
const phone = z.string({ error: "must be a string" }).regex(/^\+?[0-9 ().-]{5,30}$/, { message: "must be a phone number (digits, spaces, + ( ) . -)" });
const taxIdLast4 = z.string({ error: "must be a string" }).regex(/^\d{4}$/, { message: "must be 4 digits" });

/** A postal address; review needs line1, city, postal_code and country. Unknown keys are dropped. */
export const KycAddress = z.object(
  {
    line1: str(200).min(1).optional(),
    line2: str(200).optional(),
    city: str(100).min(1).optional(),
    state: str(100).optional(),
    postal_code: str(20).min(1).optional(),
    country: z
      .string({ error: "must be a string" })
      .regex(/^[A-Za-z]{2}$/, { message: "must be a 2-letter ISO 3166-1 country code" })
      .optional(),
  },
  { error: "must be an object" },
);
/** Who the platform talks to about a business verification; review needs name and email. */
export const KycContact = z.object(
  { name: str(255).min(1).optional(), email: email.optional(), phone: phone.optional(), title: str(255).optional() },
  { error: "must be an object" },
);
/** A person owning or controlling the business; review needs name and date_of_birth. */
export const BeneficialOwner = z.object(
  {
    name: str(255).min(1).optional(),
    date_of_birth: birthDate.optional(),
    email: email.optional(),
    phone: phone.optional(),
    address: KycAddress.optional(),
    title: str(255).optional(),
    ownership_percent: z
      .number({ error: "must be a number" })
      .min(0, { message: "must be from 0 to 100" })
      .max(100, { message: "must be from 0 to 100" })
      .optional(),
  },
  { error: "must be an object" },
);
/** One piece of evidence: its type, and where the file is (`file_id` or `url`; sandbox accepts the type alone). */
export const DocumentEvidence = z.object(
  {
    type: z.enum(DOCUMENT_TYPES, { error: `must be one of ${DOCUMENT_TYPES.join(", ")}` }),
    file_id: str(255).min(1).optional(),
    url: httpUrl.optional(),
    file_name: str(255).optional(),
    description: str(1000).optional(),
    metadata: Metadata.optional(),
  },
  { error: "must be an object" },
);
export const SubmitBusinessBody = z
  .object({
    business_type: z.enum(businessTypes, { error: `must be one of ${businessTypes.join(", ")}` }),
    legal_name: str(255).min(1),
    primary_contact: KycContact,
    business_address: KycAddress,
    document_evidence: z.array(DocumentEvidence, { error: "must be an array" }).max(50),
    tax_id_type: z.enum(taxIdTypes, { error: `must be one of ${taxIdTypes.join(", ")}` }).optional(),
    tax_id_last4: taxIdLast4.optional(),
    beneficial_owners: z.array(BeneficialOwner, { error: "must be an array" }).max(25).optional(),
    submit_for_review: bool.optional(),
    metadata: Metadata.optional(),
  })
  .superRefine((body, ctx) => refuseFullTaxIds(body, [], ctx));
export const SubmitCreatorBody = z
  .object({
    legal_name: str(255).min(1),
    email,
    date_of_birth: birthDate,
    address: KycAddress,
    document_evidence: z.array(DocumentEvidence, { error: "must be an array" }).max(50),
    display_name: str(255).optional(),
    tax_id_type: z.enum(taxIdTypes, { error: `must be one of ${taxIdTypes.join(", ")}` }).optional(),
    tax_id_last4: taxIdLast4.optional(),
    business_type: z
      .enum(["individual", "sole_proprietor", "llc", "corporation", "partnership"], {
        error: "must be one of individual, sole_proprietor, llc, corporation, partnership",
      })
      .optional(),
    certify_tax_info: bool.optional(),
    submit_for_review: bool.optional(),
    metadata: Metadata.optional(),
  })
  .superRefine((body, ctx) => refuseFullTaxIds(body, [], ctx));

/** The latest submission of a verification, as the KYC answers show it. */
export interface KycSubmissionView {
  id: string;
  status: KycStatus | "superseded";
  submitted_at: string | null;
  reviewed_at: string | null;
  rejection_reason: string | null;
}
/** The `business_kyb` / `creator_kyc` answers (`creator_kyc` also names its participant). */
export interface KycProfileView {
  status: KycStatus;
  missing_fields: string[];
  tax_certified: boolean;
  latest_submission: KycSubmissionView | null;
}
