/**
 * Reconciliation: bank lines matched to the ledger transactions they report, automatically (autoMatch of
 * @treasury/bank-statements: same currency and amount, dates within a window, references and text) or by hand.
 * A bank line and a transaction each have at most one active match; the database's partial unique indexes
 * enforce it, so concurrent runs never match one twice.
 */
import { autoMatch, type MatchedPair } from "@treasury/bank-statements";
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { sortableId } from "../domain/ids.ts";
import type { LedgerDeps } from "./deps.ts";
import { matchInvoiceLines, type InvoiceLineDeps } from "./invoice-lines.ts";
import { CURRENCY } from "./present.ts";
import type { BankLineRow, BankSideTransaction, MatchRow, NewMatch } from "./rows.ts";

type AutoMatchBody = z.output<typeof schemas.AutoMatchBody>;
type ManualMatchBody = z.output<typeof schemas.ManualMatchBody>;
type UnmatchedQuery = z.output<typeof schemas.UnmatchedQuery>;
export type ReconciliationDeps = Pick<LedgerDeps, "bankLines" | "reconciliation"> & Pick<InvoiceLineDeps, "invoiceLines">;

/** Bank lines one auto-match run considers, oldest first; a later run continues with the rest. */
export const AUTO_MATCH_LINES_MAX = 200_000;
/** Ledger transactions one run reads as candidates. */
const AUTO_MATCH_TRANSACTIONS_MAX = 1_000_000;
/** Matches inserted per statement. */
const MATCH_INSERT_ROWS_MAX = 5_000;
/** Match inserts in flight at once (each on its own pooled connection). */
const STORE_CHUNKS_IN_FLIGHT = 3;
/** Matches an auto-match answer lists; its counts cover every one. */
const MATCHES_LISTED_MAX = 100;
const DATE_WINDOW_DAYS_DEFAULT = 3;
export const UNMATCHED_PAGE_DEFAULT = 25;
const DAY_MS = 86_400_000;

/** The UTC calendar day of an ISO date or time, `YYYY-MM-DD`. */
function dayOf(s: string): string {
  return /^\d{4}-\d{2}-\d{2}$/.test(s) ? s : new Date(s).toISOString().slice(0, 10);
}

function addDays(day: string, n: number): Date {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
}

function dayRange(start: string | undefined, end: string | undefined): { from?: string; to?: string } {
  const from = start === undefined ? undefined : dayOf(start);
  const to = end === undefined ? undefined : dayOf(end);
  if (from !== undefined && to !== undefined && from > to) {
    throw new DomainError("validation_error", "start_date is after end_date", { details: [{ path: "start_date", message: "must not be after end_date" }] });
  }
  return { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
}

export function presentMatch(m: MatchRow) {
  return {
    id: m.id,
    bank_line_id: m.bank_line_id,
    transaction_id: m.transaction_id,
    method: m.method,
    status: m.unmatched_at === null ? "matched" : "unmatched",
    confidence: m.confidence,
    days_apart: m.days_apart,
    reference_match: m.reference_match,
    note: m.note,
    created_at: m.created_at.toISOString(),
    unmatched_at: m.unmatched_at?.toISOString() ?? null,
  };
}

export function presentBankLine(b: BankLineRow) {
  return {
    id: b.id,
    import_id: b.import_id,
    bank_account: b.bank_account,
    date: b.booking_date,
    value_date: b.value_date,
    amount: b.amount,
    amount_decimal: b.amount_decimal,
    currency: b.currency,
    description: b.description,
    reference: b.reference,
    bank_reference: b.bank_reference,
    counterparty: b.counterparty,
    bank_code: b.bank_code,
    line_no: b.line_no,
    created_at: b.created_at.toISOString(),
  };
}

function presentBankSide(t: BankSideTransaction) {
  return {
    id: t.id,
    transaction_type: t.kind,
    reference_id: t.reference_id,
    description: t.description,
    date: t.date,
    accounted_at: t.accounted_at.toISOString(),
    amount: t.amount,
    currency: CURRENCY,
  };
}

/**
 * Matches unmatched bank lines (booked within start_date..end_date, at most AUTO_MATCH_LINES_MAX, oldest
 * first) to unmatched transactions that moved cash within the date window, and stores the matches. A pair
 * whose line or transaction was matched meanwhile (by hand, or by a concurrent run) is skipped and counted.
 * Errors: validation_error.
 */
export async function autoMatchReconciliation(deps: ReconciliationDeps, tenant: Tenant, body: AutoMatchBody) {
  const window = body.date_window_days ?? DATE_WINDOW_DAYS_DEFAULT;
  const range = dayRange(body.start_date, body.end_date);
  const read = await deps.bankLines.unmatchedForMatching(tenant, { bankAccount: body.bank_account, ...range }, AUTO_MATCH_LINES_MAX);
  // Lines naming an invoice pay it and are matched to the payment first (invoice-lines.ts); the rest match by amount and date.
  const invoiced = await matchInvoiceLines(deps, tenant, read);
  const bank = read.filter((b) => !invoiced.lineIds.has(b.id));
  const first = bank[0]?.date;
  const last = bank[bank.length - 1]?.date;
  const ledger =
    first === undefined || last === undefined
      ? []
      : await deps.reconciliation.candidates(
          tenant,
          { from: addDays(first, -window), to: new Date(addDays(last, window + 1).getTime() - 1) },
          CURRENCY,
          AUTO_MATCH_TRANSACTIONS_MAX,
        );
  const result = autoMatch(bank, ledger, { dateWindowDays: window, ...(body.min_confidence !== undefined ? { minConfidence: body.min_confidence } : {}) });
  const stored = [...invoiced.matchIds, ...(await storeAutoMatches(deps, tenant, result.matched))];
  const listed = await deps.reconciliation.findMany(tenant, stored.slice(0, MATCHES_LISTED_MAX));
  return {
    auto_match: {
      bank_lines_considered: read.length,
      transactions_considered: ledger.length,
      matched: stored.length,
      skipped_already_matched: result.matched.length + invoiced.lineIds.size - stored.length,
      unmatched_bank_lines: read.length - stored.length,
      unmatched_transactions: ledger.length - (stored.length - invoiced.matchIds.length),
      more_bank_lines: bank.length === AUTO_MATCH_LINES_MAX,
      date_window_days: window,
      matches: listed.map(presentMatch),
      matches_truncated: stored.length > listed.length,
    },
  };
}

/**
 * Stores the pairs in chunks, STORE_CHUNKS_IN_FLIGHT at once on as many connections: the insert's index and
 * foreign-key work is PostgreSQL's, and one connection keeps one of its cores busy at most. The partial unique
 * indexes keep a line or a transaction in one active match whatever order the chunks commit in. Answers the
 * ids of the matches stored, in the pairs' order.
 */
async function storeAutoMatches(deps: ReconciliationDeps, tenant: Tenant, pairs: readonly MatchedPair[]): Promise<string[]> {
  const chunkCount = Math.ceil(pairs.length / MATCH_INSERT_ROWS_MAX);
  const stored: string[][] = new Array<string[]>(chunkCount);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < chunkCount; i = next++) {
      // Built when its turn comes: only the chunks in flight are held as rows.
      const chunk: NewMatch[] = pairs.slice(i * MATCH_INSERT_ROWS_MAX, (i + 1) * MATCH_INSERT_ROWS_MAX).map((p) => ({
        id: sortableId("rm"),
        bankLineId: p.bank_id,
        transactionId: p.ledger_id,
        method: "auto",
        confidence: p.confidence,
        daysApart: p.days_apart,
        referenceMatch: p.reference_match,
        note: null,
      }));
      const inserted = new Set(await deps.reconciliation.insertIds(tenant, chunk));
      stored[i] = chunk.filter((m) => inserted.has(m.id)).map((m) => m.id);
    }
  };
  await Promise.all(Array.from({ length: Math.min(STORE_CHUNKS_IN_FLIGHT, chunkCount) }, lane));
  return stored.flat();
}

/**
 * Matches a bank line to a transaction by hand (amounts and dates are the operator's call).
 * Errors: bank_line_not_found, transaction_not_found, bank_line_already_matched, transaction_already_matched
 * (each with the existing match).
 */
export async function createReconciliationMatch(deps: ReconciliationDeps, tenant: Tenant, body: ManualMatchBody) {
  if ((await deps.bankLines.find(tenant, body.bank_line_id)) === undefined) {
    throw new DomainError("bank_line_not_found", `Bank line ${body.bank_line_id} not found`, {
      hint: "GET /v1/reconciliations/unmatched lists unmatched bank lines",
    });
  }
  if (!(await deps.reconciliation.transactionExists(tenant, body.transaction_id)))
    throw new DomainError("transaction_not_found", `Transaction ${body.transaction_id} not found`);
  // Twice at most: a conflicting match can be ended between the insert and the look-up that names it.
  for (let attempt = 0; attempt < 2; attempt++) {
    const [row] = await deps.reconciliation.insert(tenant, [
      {
        id: sortableId("rm"),
        bankLineId: body.bank_line_id,
        transactionId: body.transaction_id,
        method: "manual",
        confidence: null,
        daysApart: null,
        referenceMatch: null,
        note: body.note ?? null,
      },
    ]);
    if (row !== undefined) return { match: presentMatch(row) };
    const byLine = await deps.reconciliation.activeOf(tenant, { bankLineId: body.bank_line_id });
    if (byLine !== undefined) {
      throw new DomainError("bank_line_already_matched", `Bank line ${body.bank_line_id} is already matched`, {
        extra: { match: presentMatch(byLine) },
        hint: `POST /v1/reconciliations/matches/${byLine.id}/delete unmatches it`,
      });
    }
    const byTxn = await deps.reconciliation.activeOf(tenant, { transactionId: body.transaction_id });
    if (byTxn !== undefined) {
      throw new DomainError("transaction_already_matched", `Transaction ${body.transaction_id} is already matched`, {
        extra: { match: presentMatch(byTxn) },
        hint: `POST /v1/reconciliations/matches/${byTxn.id}/delete unmatches it`,
      });
    }
  }
  throw new DomainError("service_unavailable", "The bank line or transaction is being matched concurrently; retry");
}

/** Ends a match; ending one already ended answers it again. Errors: match_not_found. */
export async function deleteReconciliationMatch(deps: ReconciliationDeps, tenant: Tenant, matchId: string) {
  const ended = await deps.reconciliation.end(tenant, matchId);
  if (ended !== undefined) return { match: presentMatch(ended) };
  const existing = await deps.reconciliation.find(tenant, matchId);
  if (existing === undefined) throw new DomainError("match_not_found", `Reconciliation match ${matchId} not found`);
  return { match: presentMatch(existing) };
}

/**
 * Both sides of what is not reconciled: bank lines without a match and transactions that moved cash without
 * one, each side paged with the same limit and offset. Errors: validation_error, invalid_limit.
 */
export async function listUnmatched(deps: ReconciliationDeps, tenant: Tenant, q: UnmatchedQuery) {
  const limit = q.limit ?? UNMATCHED_PAGE_DEFAULT;
  const offset = q.offset ?? 0;
  const range = dayRange(q.start_date, q.end_date);
  const txnRange = {
    from: range.from === undefined ? undefined : addDays(range.from, 0),
    to: range.to === undefined ? undefined : new Date(addDays(range.to, 1).getTime() - 1),
  };
  const [bank, transactions, transactionsTotal] = await Promise.all([
    deps.bankLines.unmatched(tenant, { bankAccount: q.bank_account, ...range }, limit, offset),
    deps.reconciliation.unmatchedTransactions(tenant, txnRange, limit, offset),
    deps.reconciliation.countUnmatchedTransactions(tenant, txnRange),
  ]);
  return {
    bank_lines: bank.rows.map(presentBankLine),
    transactions: transactions.map(presentBankSide),
    bank_lines_total: bank.total,
    transactions_total: transactionsTotal,
    limit,
    offset,
  };
}
