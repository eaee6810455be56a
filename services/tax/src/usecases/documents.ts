/**
 * A year's documents once made: read one (with the ledger transactions behind its figures), list, mark filed,
 * correct (a new document from the ledger's figures now, linked to the original, which is kept), summarise.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { presentDocument, type TaxDocument } from "../domain/documents.ts";
import { figuresOf } from "./calculations.ts";
import type { PendingEvent, TaxDeps } from "./ports.ts";
import { checkYearEnded } from "./years.ts";

const LIST_LIMIT_DEFAULT = 25;
/** Sources answered with one document: a year of daily sales and their refunds fit. */
export const SOURCES_MAX = 5_000;

/** Errors: tax_document_not_found. */
export async function getDocument(deps: Pick<TaxDeps, "documents">, tenant: Tenant, id: string): Promise<TaxDocument> {
  const doc = await deps.documents.get(tenant, id);
  if (doc === undefined)
    throw new DomainError("tax_document_not_found", `Tax document ${id} not found`, { hint: "GET /v1/tax/documents?tax_year=… lists them" });
  return doc;
}

/**
 * The ledger transactions behind a document's figures, as the ledger holds them now: for a draft or filed
 * document, the sales sum to its gross and the refunds to its refunds (a corrected one may differ: its successor
 * has the figures now). Errors: service_unavailable, validation_error (more sources than one answer carries).
 */
export async function documentSources(deps: Pick<TaxDeps, "ledger">, tenant: Tenant, doc: TaxDocument): Promise<schemas.TaxSource[]> {
  const out: schemas.TaxSource[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await deps.ledger.sources(tenant, { tax_year: doc.taxYear, participant_id: doc.participantId, ...(after === undefined ? {} : { after }) });
    out.push(...page.sources);
    if (out.length > SOURCES_MAX) {
      throw new DomainError("validation_error", `The document has more than ${SOURCES_MAX} source transactions`, {
        hint: "GET /v1/get-transactions with the participant and dates lists them page by page",
      });
    }
    if (page.next_after === null) return out;
    after = page.next_after;
  }
}

export async function listDocuments(
  deps: Pick<TaxDeps, "documents">,
  tenant: Tenant,
  q: {
    tax_year?: number | undefined;
    status?: schemas.TaxDocumentStatus | undefined;
    participant_id?: string | undefined;
    limit?: number | undefined;
    offset?: number | undefined;
  },
) {
  return deps.documents.list(tenant, {
    taxYear: q.tax_year,
    status: q.status,
    participantId: q.participant_id,
    limit: q.limit ?? LIST_LIMIT_DEFAULT,
    offset: q.offset ?? 0,
  });
}

function filedEvent(d: TaxDocument): PendingEvent {
  return { type: "tax.document.filed", data: { tax_document: presentDocument(d) } };
}

/** Errors: tax_document_not_found, tax_document_state (not a draft), tax_year_not_ended (its figures may still change). */
export async function markFiled(deps: Pick<TaxDeps, "documents" | "now">, tenant: Tenant, id: string): Promise<TaxDocument> {
  const doc = await getDocument(deps, tenant, id);
  if (doc.status !== "draft") throw stateError(doc, "marked filed", "only a draft is filed");
  checkYearEnded(deps, tenant, doc.taxYear);
  const filed = await deps.documents.markFiled(tenant, id, deps.now(tenant), filedEvent);
  if (filed === undefined) throw stateError(await getDocument(deps, tenant, id), "marked filed", "only a draft is filed");
  return filed;
}

/**
 * Corrects a filed document with the ledger's figures now: the original becomes `corrected` and links to its
 * successor, a draft that links back (its B record is flagged as a correction in the FIRE file).
 * Errors: tax_document_not_found, tax_document_state (not filed), service_unavailable.
 */
export async function correctDocument(
  deps: Pick<TaxDeps, "documents" | "ledger" | "profiles" | "now" | "newId">,
  tenant: Tenant,
  id: string,
  reason: string | undefined,
): Promise<{ original: TaxDocument; corrected: TaxDocument }> {
  const doc = await getDocument(deps, tenant, id);
  if (doc.status !== "filed") throw stateError(doc, "corrected", "only a filed document is corrected; a draft is updated by generating again");
  const answer = await deps.ledger.figures(tenant, { tax_year: doc.taxYear, participant_ids: [doc.participantId] });
  const figures = answer.figures[0];
  if (figures === undefined) throw new DomainError("participant_not_found", `Participant ${doc.participantId} not found`);
  const profile = await deps.profiles.get(tenant, doc.participantId);
  const successor = {
    id: deps.newId(),
    figures: figuresOf(figures),
    form: doc.form,
    recipientTinLast4: profile?.tinLast4 ?? doc.recipientTinLast4,
    reason: reason ?? null,
  };
  const done = await deps.documents.correct(tenant, id, successor, deps.now(tenant), (original, corrected) => ({
    type: "tax.document.corrected",
    data: { tax_document: presentDocument(corrected), original_document: presentDocument(original) },
  }));
  if (done === undefined) throw stateError(await getDocument(deps, tenant, id), "corrected", "only a filed document is corrected");
  return done;
}

function stateError(doc: TaxDocument, verb: string, why: string): DomainError {
  return new DomainError("tax_document_state", `Tax document ${doc.id} is ${doc.status} and cannot be ${verb}: ${why}`, {
    ...(doc.correctedBy === null ? {} : { hint: `Its correction is ${doc.correctedBy}` }),
  });
}

/** Errors: tax_summary_not_found (no document of that year in this org and environment). */
export async function yearSummary(deps: Pick<TaxDeps, "documents">, tenant: Tenant, taxYear: number) {
  const rows = await deps.documents.summary(tenant, taxYear);
  if (rows.length === 0) {
    throw new DomainError("tax_summary_not_found", `No tax documents for ${taxYear}`, { hint: "POST /v1/tax/documents/generate makes a year's documents" });
  }
  const current = rows.filter((r) => r.status !== "corrected");
  return {
    tax_year: taxYear,
    documents: current.reduce((n, r) => n + r.count, 0),
    reported_cents: current.reduce((n, r) => n + r.reportedCents, 0),
    by_form_and_status: rows.map((r) => ({ form: r.form, status: r.status, count: r.count, reported_cents: r.reportedCents })),
  };
}
