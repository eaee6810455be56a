/**
 * The figures the tax service reads for 1099s (`svc.ledger.internal.taxFigures` and `taxSources`): a tax year's
 * sales, refunds and reversals per participant, by accounting time (effective date, else posting time), so they are
 * the ledger as of the year's end. The port is declared here, beside its use cases; store/tax-figures.ts implements
 * it. Only the tax service may call them (INTERNAL_CALLS).
 */
import type { schemas, Tenant } from "@treasury/contracts";

/** A tax year as accounting times: [January 1st, next January 1st) UTC. */
export interface YearWindow {
  from: Date;
  to: Date;
}

export interface TaxFiguresReader {
  /** Participant ids of the tenant after `after`, in order, at most `limit` (the candidates of one page). */
  participantsAfter(tenant: Tenant, after: string | undefined, limit: number): Promise<string[]>;
  /** Which of these ids the tenant has. */
  knownParticipants(tenant: Tenant, ids: readonly string[]): Promise<Set<string>>;
  /**
   * The figures of these participants in the window (named, or the consecutive ids from `from` to `to`, a page);
   * a participant with no activity is absent.
   */
  figures(tenant: Tenant, who: { ids: readonly string[] } | { from: string; to: string }, window: YearWindow): Promise<schemas.TaxFigures[]>;
  sources(tenant: Tenant, participantId: string, window: YearWindow, after: string | undefined, limit: number): Promise<schemas.TaxSource[]>;
}

export function yearWindow(taxYear: number): YearWindow {
  return { from: new Date(Date.UTC(taxYear, 0, 1)), to: new Date(Date.UTC(taxYear + 1, 0, 1)) };
}

const zero = (participantId: string): schemas.TaxFigures => ({
  participant_id: participantId,
  gross_cents: 0,
  refunds_cents: 0,
  transaction_count: 0,
  monthly_cents: Array.from({ length: 12 }, () => 0),
});

export async function taxFigures(reader: TaxFiguresReader, tenant: Tenant, req: schemas.TaxFiguresRequest): Promise<schemas.TaxFiguresAnswer> {
  const window = yearWindow(req.tax_year);
  if (req.participant_ids !== undefined) {
    // Named participants: every known one answers, with zeros when the year had nothing of theirs.
    const known = await reader.knownParticipants(tenant, req.participant_ids);
    const ids = req.participant_ids.filter((id) => known.has(id));
    const found = new Map((await reader.figures(tenant, { ids }, window)).map((f) => [f.participant_id, f]));
    return {
      figures: ids.map((id) => found.get(id) ?? zero(id)),
      next_after: null,
      unknown_participant_ids: req.participant_ids.filter((id) => !known.has(id)),
    };
  }
  const limit = req.limit ?? 1_000;
  const page = await reader.participantsAfter(tenant, req.after, limit);
  const first = page[0];
  const last = page[page.length - 1];
  // The page is the next `limit` participants in id order: its range holds them and no other.
  const figures = first === undefined || last === undefined ? [] : await reader.figures(tenant, { from: first, to: last }, window);
  return { figures, next_after: page.length === limit ? (page[page.length - 1] ?? null) : null, unknown_participant_ids: [] };
}

export async function taxSources(reader: TaxFiguresReader, tenant: Tenant, req: schemas.TaxSourcesRequest): Promise<schemas.TaxSourcesAnswer> {
  const limit = req.limit ?? 1_000;
  const sources = await reader.sources(tenant, req.participant_id, yearWindow(req.tax_year), req.after, limit);
  return { sources, next_after: sources.length === limit ? (sources[sources.length - 1]?.transaction_id ?? null) : null };
}
