/**
 * Reconciliation: matches between bank lines and ledger transactions, and the ledger's side of a bank account.
 * A transaction's bank-side amount is its net movement on platform cash (debits in, credits out), so it has the
 * sign a bank line has: money in is positive. Transactions that do not move cash have nothing to match.
 */
import type { Tenant } from "@treasury/contracts";
import type { BankSideTransaction, MatchCandidate, MatchRow, NewMatch, TransactionRange } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

/** The system accounts whose movements a bank statement reports. */
export const BANK_SIDE_ACCOUNT_TYPES = ["platform_cash"] as const;

const matchColumns = (q: Q) => q`
  m.id, m.bank_line_id, m.transaction_id, m.method, m.confidence, m.days_apart, m.reference_match, m.note, m.created_at, m.unmatched_at`;

/**
 * The insert of matches; one whose bank line or transaction already has an active match (committed, or
 * inserted by a concurrent transaction that then commits) is skipped.
 */
function insertMatchRows(q: Q, s: Tenant, matches: readonly NewMatch[]) {
  const col = <T>(f: (m: NewMatch) => T): T[] => matches.map(f);
  return q`
    insert into ledger.reconciliation_matches as m (id, org_id, livemode, bank_line_id, transaction_id, method, confidence,
      days_apart, reference_match, note)
    select u.id, ${s.orgId}, ${s.livemode}, u.bank_line_id, u.transaction_id, u.method, u.confidence, u.days_apart,
      u.reference_match, u.note
    from unnest(${col((m) => m.id)}::text[], ${col((m) => m.bankLineId)}::text[], ${col((m) => m.transactionId)}::text[],
      ${col((m) => m.method)}::text[], ${col((m) => m.confidence)}::real[], ${col((m) => m.daysApart)}::int[],
      ${col((m) => (m.referenceMatch === null ? null : String(m.referenceMatch)))}::text[]::boolean[], ${col((m) => m.note)}::text[])
      as u(id, bank_line_id, transaction_id, method, confidence, days_apart, reference_match, note)
    on conflict do nothing`;
}

/** Inserts matches (see insertMatchRows); answers the rows inserted. */
export async function insertMatches(q: Q, s: Tenant, matches: readonly NewMatch[]): Promise<MatchRow[]> {
  if (matches.length === 0) return [];
  return q<MatchRow[]>`${insertMatchRows(q, s, matches)} returning ${matchColumns(q)}`;
}

/** Inserts matches (see insertMatchRows); answers only the ids inserted (bulk runs keep no rows in memory). */
export async function insertMatchIds(q: Q, s: Tenant, matches: readonly NewMatch[]): Promise<string[]> {
  if (matches.length === 0) return [];
  const rows = await q<{ id: string }[]>`${insertMatchRows(q, s, matches)} returning m.id`;
  return rows.map((r) => r.id);
}

export async function findMatches(q: Q, s: Tenant, ids: readonly string[]): Promise<MatchRow[]> {
  if (ids.length === 0) return [];
  return q<MatchRow[]>`
    select ${matchColumns(q)} from ledger.reconciliation_matches m
    where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.id = any(${[...ids]}::text[])
    order by m.id`;
}

/** The active match of a bank line or of a transaction, if any. */
export async function activeMatchOf(q: Q, s: Tenant, by: { bankLineId: string } | { transactionId: string }): Promise<MatchRow | undefined> {
  const [row] = await q<MatchRow[]>`
    select ${matchColumns(q)} from ledger.reconciliation_matches m
    where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.unmatched_at is null
      and ${"bankLineId" in by ? q`m.bank_line_id = ${by.bankLineId}` : q`m.transaction_id = ${by.transactionId}`}`;
  return row;
}

export async function findMatch(q: Q, s: Tenant, id: string): Promise<MatchRow | undefined> {
  const [row] = await q<MatchRow[]>`
    select ${matchColumns(q)} from ledger.reconciliation_matches m
    where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.id = ${id}`;
  return row;
}

/** Ends an active match; undefined when the match is not active (unknown or already ended). */
export async function endMatch(q: Q, s: Tenant, id: string): Promise<MatchRow | undefined> {
  const [row] = await q<MatchRow[]>`
    update ledger.reconciliation_matches m set unmatched_at = now()
    where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.id = ${id} and m.unmatched_at is null
    returning ${matchColumns(q)}`;
  return row;
}

export async function transactionExists(q: Q, s: Tenant, id: string): Promise<boolean> {
  const [row] = await q`select 1 from ledger.transactions where org_id = ${s.orgId} and livemode = ${s.livemode} and id = ${id}`;
  return row !== undefined;
}

/** The org's bank-side accounts (its platform cash accounts). */
async function bankSideAccountIds(q: Q, s: Tenant): Promise<string[]> {
  const rows = await q<{ id: string }[]>`
    select id from ledger.accounts
    where org_id = ${s.orgId} and livemode = ${s.livemode} and not is_wallet and account_type = any(${[...BANK_SIDE_ACCOUNT_TYPES]}::text[])`;
  return rows.map((r) => r.id);
}

/**
 * Transactions without an active match that moved cash, with their net cash movement, within a range of
 * accounting time (coalesce(effective_at, created_at), served by transactions_accounted_idx).
 *
 * The movement is summed per transaction over all its entries (a handful, by entries_transaction_idx), counting
 * only those on a cash account. The account filter is deliberately not a condition the planner could use an
 * index for: on tables whose statistics are not yet gathered (a bulk load), it chose to scan a cash account's
 * whole history once per transaction, which took minutes for 100,000 transactions.
 */
function bankSide(q: Q, s: Tenant, range: TransactionRange, cashIds: readonly string[]) {
  return q`
    select t.id, to_char(coalesce(t.effective_at, t.created_at) at time zone 'UTC', 'YYYY-MM-DD') as date,
      coalesce(t.effective_at, t.created_at) as accounted_at, t.kind, t.reference_id, t.description, c.amount
    from ledger.transactions t
    cross join lateral (
      select coalesce(sum(case when e.account_id = any(${[...cashIds]}::uuid[])
        then (case when e.entry_type = 'debit' then e.amount else -e.amount end) else 0 end), 0)::bigint as amount
      from ledger.entries e
      where e.transaction_id = t.id and e.org_id = ${s.orgId} and e.livemode = ${s.livemode}) c
    where t.org_id = ${s.orgId} and t.livemode = ${s.livemode}
      ${range.from !== undefined ? q`and coalesce(t.effective_at, t.created_at) >= ${range.from}` : q``}
      ${range.to !== undefined ? q`and coalesce(t.effective_at, t.created_at) <= ${range.to}` : q``}
      and not exists (select 1 from ledger.reconciliation_matches m
        where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.transaction_id = t.id and m.unmatched_at is null)
      and c.amount <> 0`;
}

/** Unmatched transactions that moved cash, oldest accounting time first; `limit` bounds the rows. */
export async function unmatchedBankSideTransactions(q: Q, s: Tenant, range: TransactionRange, limit: number, offset = 0): Promise<BankSideTransaction[]> {
  const cashIds = await bankSideAccountIds(q, s);
  if (cashIds.length === 0) return [];
  const rows = await q<(Omit<BankSideTransaction, "amount"> & { amount: string })[]>`
    select * from (${bankSide(q, s, range, cashIds)}) x order by x.accounted_at, x.id limit ${limit} offset ${offset}`;
  return rows.map((r) => ({ ...r, amount: money(r.amount) }));
}

/** How many transactions unmatchedBankSideTransactions would list without a limit. */
export async function countUnmatchedBankSideTransactions(q: Q, s: Tenant, range: TransactionRange): Promise<number> {
  const cashIds = await bankSideAccountIds(q, s);
  if (cashIds.length === 0) return 0;
  const [row] = await q<{ n: string }[]>`select count(*) as n from (${bankSide(q, s, range, cashIds)}) x`;
  return Number(row?.n ?? 0);
}

/** Unmatched transactions that moved cash, as auto-match candidates in `currency`, oldest first. */
export async function bankSideCandidates(q: Q, s: Tenant, range: TransactionRange, currency: string, limit: number): Promise<MatchCandidate[]> {
  const cashIds = await bankSideAccountIds(q, s);
  if (cashIds.length === 0) return [];
  const rows = await q<(Omit<MatchCandidate, "amount"> & { amount: string | number })[]>`
    select x.id, x.date, x.amount, ${currency}::text as currency, x.reference_id as reference, coalesce(x.description, '') as description
    from (${bankSide(q, s, range, cashIds)}) x order by x.accounted_at, x.id limit ${limit}`;
  // Converted in place: a second object per row would double what 100,000 candidates hold.
  for (const r of rows) r.amount = money(r.amount);
  return rows as MatchCandidate[];
}
