/**
 * What a verification needs before an operator can review it, as field paths (`missing_fields`). The body
 * schemas already require the spec's starred fields; these are the parts review needs on top of them: a complete
 * address, the right documents, a tax id where one is certified or the business needs one. Pure functions.
 */
import { DomainError, schemas } from "@treasury/contracts";
import type { z } from "zod";

export type BusinessBody = z.output<typeof schemas.SubmitBusinessBody>;
export type CreatorBody = z.output<typeof schemas.SubmitCreatorBody>;
type Address = z.output<typeof schemas.KycAddress>;
type Document = z.output<typeof schemas.DocumentEvidence>;

const ADDRESS_FIELDS = ["line1", "city", "postal_code", "country"] as const;
/** Business types that are legal entities: they prove their formation and name who owns them. */
const ENTITY_TYPES: ReadonlySet<string> = new Set(["llc", "corporation", "partnership", "nonprofit"]);
/** Entity types whose owners must be named (nonprofits have no owners). */
const OWNED_TYPES: ReadonlySet<string> = new Set(["llc", "corporation", "partnership"]);

function addressGaps(prefix: string, address: Address | undefined): string[] {
  return ADDRESS_FIELDS.filter((f) => address?.[f] === undefined).map((f) => `${prefix}.${f}`);
}

function hasDocument(docs: readonly Document[] | undefined, ...types: string[]): boolean {
  return (docs ?? []).some((d) => types.includes(d.type));
}

function taxIdGaps(body: { tax_id_type?: string | undefined; tax_id_last4?: string | undefined }): string[] {
  return [...(body.tax_id_type === undefined ? ["tax_id_type"] : []), ...(body.tax_id_last4 === undefined ? ["tax_id_last4"] : [])];
}

/** A creator: full address and a government id; a certified tax profile needs the tax id type and last four digits. */
export function creatorMissingFields(body: Partial<CreatorBody>): string[] {
  return [
    ...(body.legal_name === undefined ? ["legal_name"] : []),
    ...(body.email === undefined ? ["email"] : []),
    ...(body.date_of_birth === undefined ? ["date_of_birth"] : []),
    ...addressGaps("address", body.address),
    ...(hasDocument(body.document_evidence, "government_id") ? [] : ["document_evidence.government_id"]),
    ...(body.certify_tax_info === true ? taxIdGaps(body) : []),
  ];
}

/**
 * A business: contact name and email, full address, its tax id, and a document proving who it is: a
 * government id for individuals and sole proprietors, articles of incorporation (or an EIN letter) for entities.
 * Owned entities name their beneficial owners, each with a name and date of birth.
 */
export function businessMissingFields(body: Partial<BusinessBody>): string[] {
  const entity = body.business_type !== undefined && ENTITY_TYPES.has(body.business_type);
  const documentGap = entity
    ? hasDocument(body.document_evidence, "articles_of_incorporation", "ein_letter")
      ? []
      : ["document_evidence.articles_of_incorporation"]
    : hasDocument(body.document_evidence, "government_id")
      ? []
      : ["document_evidence.government_id"];
  const owners = body.beneficial_owners ?? [];
  const ownerGaps =
    body.business_type !== undefined && OWNED_TYPES.has(body.business_type)
      ? owners.length === 0
        ? ["beneficial_owners"]
        : owners.flatMap((o, i) => [
            ...(o.name === undefined ? [`beneficial_owners.${i}.name`] : []),
            ...(o.date_of_birth === undefined ? [`beneficial_owners.${i}.date_of_birth`] : []),
          ])
      : [];
  return [
    ...(body.business_type === undefined ? ["business_type"] : []),
    ...(body.legal_name === undefined ? ["legal_name"] : []),
    ...(body.primary_contact?.name === undefined ? ["primary_contact.name"] : []),
    ...(body.primary_contact?.email === undefined ? ["primary_contact.email"] : []),
    ...addressGaps("business_address", body.business_address),
    ...taxIdGaps(body),
    ...documentGap,
    ...ownerGaps,
  ];
}

/**
 * With a live key every document must say where its file is; in sandbox the type alone stands for a test
 * document. A document without either is malformed, draft or not, so it is a 400 rather than a missing field.
 */
export function checkDocuments(docs: readonly Document[], livemode: boolean): void {
  if (!livemode) return;
  const details = docs.flatMap((d, i) =>
    d.file_id === undefined && d.url === undefined ? [{ path: `document_evidence.${i}`, message: "file_id or url is required with a live key" }] : [],
  );
  if (details.length > 0) {
    throw new DomainError("validation_error", `Invalid body: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`, { details });
  }
}
