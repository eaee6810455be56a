/**
 * Generation of a year's documents: every participant with activity in the year, a page at a time from the ledger;
 * a year still running may be generated (drafts with the figures so far), only an ended one filed (documents.ts);
 * one document per participant over the org's threshold. Idempotent: generating again updates drafts whose figures
 * changed, leaves filed documents alone (a change to one is a correction) and never makes a second document. The
 * next page is read from the ledger while the current one is written.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { presentDocument, type TaxDocument } from "../domain/documents.ts";
import { meetsThreshold } from "../domain/thresholds.ts";
import { figuresOf, settingsOf } from "./calculations.ts";
import type { DraftWrite, GenerateOutcome, PageProgress, PendingEvent, TaxDeps } from "./ports.ts";
import { checkYearBegun } from "./years.ts";

export interface GenerateResult extends GenerateOutcome {
  tax_year: number;
  participants_read: number;
}

export function generatedEvent(d: TaxDocument): PendingEvent {
  return { type: "tax.document.generated", data: { tax_document: presentDocument(d) } };
}

/** Where a run starts and what it reports to: a job's cursor, its id, and whether to stop between pages. */
export interface RunFrom {
  generationId: string;
  after: string | null;
  signal?: AbortSignal;
}

/**
 * Generates the year, all its pages in this call (the benchmark's and the job's path). With `from`, each page's
 * progress is committed with its documents and the run starts after the job's cursor; a stop between pages leaves
 * the job for the next run. Errors: invalid_tax_year, service_unavailable (the ledger did not answer: run it again).
 */
export async function generateDocuments(deps: TaxDeps, tenant: Tenant, taxYear: number, from?: RunFrom): Promise<GenerateResult> {
  checkYearBegun(deps, tenant, taxYear);
  const settings = await settingsOf(deps, tenant, taxYear);
  const total: GenerateResult = { tax_year: taxYear, participants_read: 0, created: 0, updated: 0, unchanged: 0, filed: 0, removed: 0 };
  const read = (after: string | null | undefined) =>
    deps.ledger.figures(tenant, { tax_year: taxYear, limit: deps.generatePageSize, ...(after === null || after === undefined ? {} : { after }) });
  let page: Promise<schemas.TaxFiguresAnswer> | undefined = read(from?.after);
  while (page !== undefined) {
    from?.signal?.throwIfAborted();
    const answer: schemas.TaxFiguresAnswer = await page;
    page = answer.next_after === null ? undefined : read(answer.next_after);
    // A page read ahead and never awaited (this one failed) must not surface as an unhandled rejection.
    page?.catch(() => undefined);
    const progress =
      from === undefined
        ? undefined
        : { generationId: from.generationId, after: answer.next_after, participantsRead: answer.figures.length, leaseMs: deps.generationLeaseMs };
    const outcome = await writePage(deps, tenant, taxYear, settings, answer.figures, progress);
    total.participants_read += answer.figures.length;
    total.created += outcome.created;
    total.updated += outcome.updated;
    total.unchanged += outcome.unchanged;
    total.filed += outcome.filed;
    total.removed += outcome.removed;
  }
  return total;
}

/** A page's drafts and the participants under the threshold, then one write; no read of this service's rows. */
async function writePage(
  deps: TaxDeps,
  tenant: Tenant,
  taxYear: number,
  settings: Awaited<ReturnType<typeof settingsOf>>,
  page: readonly schemas.TaxFigures[],
  progress: PageProgress | undefined,
): Promise<GenerateOutcome> {
  // An empty page still moves a job's cursor (and ends the job when it is the last).
  if (page.length === 0 && progress === undefined) return { created: 0, updated: 0, unchanged: 0, filed: 0, removed: 0 };
  const drafts: DraftWrite[] = [];
  const below: string[] = [];
  for (const f of page) {
    if (meetsThreshold(settings, f.gross_cents, f.refunds_cents, f.transaction_count)) {
      drafts.push({ figures: figuresOf(f), form: settings.form, newId: deps.newId() });
    } else {
      below.push(f.participant_id);
    }
  }
  return deps.documents.writeDrafts(tenant, taxYear, drafts, below, deps.now(tenant), generatedEvent, progress);
}
