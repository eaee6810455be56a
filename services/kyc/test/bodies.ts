/**
 * Submission bodies of the tests: raw (what a client sends, for the integration tests) and checked by the same
 * schemas the handlers use (for the unit tests of the use cases).
 */
import { parseOrThrow, schemas } from "@treasury/contracts";
import type { BusinessBody, CreatorBody } from "../src/domain/requirements.ts";

/** A complete creator submission (sandbox documents: the type alone). */
export function creatorBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    legal_name: "Ada Quill Lovelace",
    email: "ada.quill@example.com",
    date_of_birth: "1990-12-10",
    address: { line1: "12 Analytical Row", city: "London", postal_code: "NW1 6XE", country: "GB" },
    document_evidence: [{ type: "government_id", description: "passport" }],
    tax_id_type: "ssn",
    tax_id_last4: "6789",
    certify_tax_info: true,
    ...extra,
  };
}

/** A complete business submission of an LLC. */
export function businessBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    business_type: "llc",
    legal_name: "Quill Works LLC",
    primary_contact: { name: "Grace Quill", email: "grace@quill.example", phone: "+1 (415) 555-0134" },
    business_address: { line1: "500 Market St", city: "San Francisco", state: "CA", postal_code: "94105", country: "US" },
    document_evidence: [{ type: "articles_of_incorporation", file_id: "file_articles" }],
    tax_id_type: "ein",
    tax_id_last4: "4321",
    beneficial_owners: [{ name: "Grace Quill", date_of_birth: "1985-03-14", ownership_percent: 60 }],
    ...extra,
  };
}

/** A creator submission as the handler hands it to the use cases; documents name a file, as a live review needs. */
export function creator(extra: Record<string, unknown> = {}): CreatorBody {
  return parseOrThrow(
    schemas.SubmitCreatorBody,
    creatorBody({ document_evidence: [{ type: "government_id", file_id: "file_passport", description: "passport" }], ...extra }),
  );
}

export function business(extra: Record<string, unknown> = {}): BusinessBody {
  return parseOrThrow(schemas.SubmitBusinessBody, businessBody(extra));
}
