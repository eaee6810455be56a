/**
 * The year's current documents (drafts and filed, not the corrected originals) as CSV, JSON or the IRS FIRE file.
 * Every format is a stream of text chunks read from the store a page at a time, so memory stays flat whatever the
 * number of documents (bench:tax writes 50,000 this way); the API collects the stream up to TAX_EXPORT_BYTES_MAX.
 * CSV and JSON are for review and show the TIN's last four digits; only the FIRE file, which goes to the IRS,
 * carries the full TIN, opened from its seal as the record is written.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { amountsOf, presentDocument, reportedCents, type TaxDocument } from "../domain/documents.ts";
import { fireAmounts, fireRecords, type FirePayee } from "../domain/fire.ts";
import { tinAad } from "./profiles.ts";
import type { TaxDeps, TaxProfile } from "./ports.ts";
import { checkYearBegun } from "./years.ts";

const EXPORT_PAGE_SIZE = 1_000;
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

export const CONTENT_TYPES: Record<schemas.ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  json: "application/json; charset=utf-8",
  fire: "text/plain; charset=us-ascii",
};

type ExportDeps = Pick<TaxDeps, "documents" | "profiles" | "sealer" | "filer" | "now">;
type Page = { docs: TaxDocument[]; profiles: Map<string, TaxProfile> };

async function* pages(deps: ExportDeps, tenant: Tenant, taxYear: number): AsyncGenerator<Page> {
  for await (const docs of deps.documents.current(tenant, taxYear, EXPORT_PAGE_SIZE)) {
    yield {
      docs,
      profiles: await deps.profiles.many(
        tenant,
        docs.map((d) => d.participantId),
      ),
    };
  }
}

function csvCell(v: string | number | null): string {
  const s = v === null ? "" : String(v);
  // A leading =, +, - or @ would be a formula in a spreadsheet: quoted with a leading apostrophe.
  const safe = /^[=+\-@]/.test(s) && typeof v === "string" ? `'${s}` : s;
  return /[",\r\n]/.test(safe) || safe !== s ? `"${safe.replace(/"/g, '""')}"` : safe;
}

async function* csv(deps: ExportDeps, tenant: Tenant, taxYear: number): AsyncGenerator<string> {
  const head = ["document_id", "tax_year", "form", "status", "participant_id", "recipient_name", "tin_type", "recipient_tin_last4"];
  yield `${[...head, "gross_payments_cents", "refunds_cents", "reported_cents", "transaction_count", ...MONTHS.map((m) => `${m}_cents`), "corrects_document_id"].join(",")}\r\n`;
  for await (const { docs, profiles } of pages(deps, tenant, taxYear)) {
    let chunk = "";
    for (const d of docs) {
      const p = profiles.get(d.participantId);
      const cells = [d.id, d.taxYear, d.form, d.status, d.participantId, p?.legalName ?? null, p?.tinType ?? null, d.recipientTinLast4];
      const figures = [d.grossCents, d.refundsCents, reportedCents(d), d.transactionCount, ...d.monthlyCents, d.corrects];
      chunk += `${[...cells, ...figures].map(csvCell).join(",")}\r\n`;
    }
    yield chunk;
  }
}

async function* json(deps: ExportDeps, tenant: Tenant, taxYear: number): AsyncGenerator<string> {
  yield `{"tax_year":${taxYear},"tax_documents":[`;
  let first = true;
  for await (const { docs, profiles } of pages(deps, tenant, taxYear)) {
    const items = docs.map((d) => {
      const p = profiles.get(d.participantId);
      return JSON.stringify({ ...presentDocument(d), amounts: amountsOf(d), recipient_name: p?.legalName ?? null, tin_type: p?.tinType ?? null });
    });
    if (items.length > 0) yield `${first ? "" : ","}${items.join(",")}`;
    first = false;
  }
  yield "]}";
}

function payeeOf(deps: ExportDeps, tenant: Tenant, d: TaxDocument, p: TaxProfile | undefined): FirePayee {
  const tin = p === undefined || deps.sealer === undefined ? null : deps.sealer.open(p.tinSealed, tinAad(tenant, p.participantId));
  return {
    form: d.form,
    tinType: p?.tinType ?? null,
    tin,
    name: p?.legalName ?? d.participantId,
    address: p === undefined ? "" : [p.address.line1, p.address.line2].filter(Boolean).join(" "),
    city: p?.address.city ?? "",
    state: p?.address.state ?? "",
    zip: p?.address.postal_code ?? "",
    accountNumber: d.participantId.slice(0, 20),
    amounts: fireAmounts(d.form, reportedCents(d), d.monthlyCents),
    transactionCount: d.transactionCount,
    corrected: d.corrects !== null,
  };
}

async function* payees(deps: ExportDeps, tenant: Tenant, taxYear: number): AsyncGenerator<FirePayee> {
  for await (const { docs, profiles } of pages(deps, tenant, taxYear)) {
    for (const d of docs) yield payeeOf(deps, tenant, d, profiles.get(d.participantId));
  }
}

/** Records joined into chunks of about a page: one write per page, not one per 750-byte record. */
const FIRE_CHUNK_RECORDS = EXPORT_PAGE_SIZE;

async function* fire(deps: ExportDeps, tenant: Tenant, taxYear: number): AsyncGenerator<string> {
  if (deps.sealer === undefined) throw new DomainError("service_unavailable", "The FIRE file needs the TINs' encryption keys, which are not configured");
  const payeeCount = await deps.documents.countCurrent(tenant, taxYear);
  const file = { taxYear, test: !tenant.livemode, transmitter: deps.filer.transmitter, payer: deps.filer.payer, payeeCount };
  let chunk: string[] = [];
  for await (const record of fireRecords(file, payees(deps, tenant, taxYear))) {
    chunk.push(record);
    if (chunk.length >= FIRE_CHUNK_RECORDS) {
      yield chunk.join("");
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk.join("");
}

/** The export as a stream of text chunks. Errors: invalid_tax_year, service_unavailable (fire without keys). */
export function exportDocuments(deps: ExportDeps, tenant: Tenant, taxYear: number, format: schemas.ExportFormat): AsyncGenerator<string> {
  checkYearBegun(deps, tenant, taxYear);
  if (format === "csv") return csv(deps, tenant, taxYear);
  if (format === "json") return json(deps, tenant, taxYear);
  return fire(deps, tenant, taxYear);
}

/** The export collected for one API answer. Errors: export_too_large, and exportDocuments'. */
export async function exportToText(
  deps: ExportDeps & Pick<TaxDeps, "exportBytesMax">,
  tenant: Tenant,
  taxYear: number,
  format: schemas.ExportFormat,
): Promise<string> {
  let text = "";
  for await (const chunk of exportDocuments(deps, tenant, taxYear, format)) {
    text += chunk;
    if (text.length > deps.exportBytesMax) {
      throw new DomainError("export_too_large", `The ${format} export of ${taxYear} is larger than ${deps.exportBytesMax} bytes`, {
        hint: "GET /v1/tax/documents?tax_year=… pages through the same documents",
      });
    }
  }
  return text;
}
