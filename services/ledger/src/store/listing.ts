/** Read models: transaction listing and per-account totals for reports. */
import type { Tenant } from "@treasury/contracts";
import type { Side } from "../domain/accounts.ts";
import type { AccountTotals, HistoryRow, ListedEntry, ListedRow, TransactionFilter } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

export async function listTransactions(q: Q, s: Tenant, f: TransactionFilter, limit: number, offset: number): Promise<{ rows: ListedRow[]; total: number }> {
  const where = q`
    t.org_id = ${s.orgId} and t.livemode = ${s.livemode}
    ${f.kind !== undefined ? q`and t.kind = ${f.kind}` : q``}
    ${f.status !== undefined ? q`and t.status = ${f.status}` : q``}
    ${f.from !== undefined ? q`and coalesce(t.effective_at, t.created_at) >= ${f.from}` : q``}
    ${f.to !== undefined ? q`and coalesce(t.effective_at, t.created_at) <= ${f.to}` : q``}
    ${f.walletId !== undefined ? q`and exists (select 1 from ledger.entries e where e.transaction_id = t.id and e.account_id = ${f.walletId})` : q``}`;
  const rows = await q<(Omit<ListedRow, "amount" | "reversed_amount"> & { amount: string; reversed_amount: string })[]>`
    select t.id, t.kind, t.reference_id, t.status, t.amount, t.reversed_amount, t.reversal_of, t.description, t.metadata, t.created_at
    from ledger.transactions t where ${where}
    order by t.created_at desc, t.id desc limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.transactions t where ${where}`;
  return { rows: rows.map((r) => ({ ...r, amount: money(r.amount), reversed_amount: money(r.reversed_amount) })), total: Number(count?.n ?? 0) };
}

export async function entriesWithAccounts(q: Q, s: Tenant, transactionIds: readonly string[]): Promise<Map<string, ListedEntry[]>> {
  const out = new Map<string, ListedEntry[]>();
  if (transactionIds.length === 0) return out;
  const rows = await q<
    {
      transaction_id: string;
      id: string;
      account_id: string;
      entry_type: Side;
      amount: string;
      balance_after: string | null;
      account_type: string;
      entity_id: string;
      participant_id: string | null;
      owner_id: string | null;
      name: string;
    }[]
  >`
    select e.transaction_id, e.id, e.account_id, e.entry_type, e.amount, e.balance_after, a.account_type, a.entity_id, a.participant_id, a.owner_id, a.name
    from ledger.entries e join ledger.accounts a on a.id = e.account_id
    where e.transaction_id = any(${[...transactionIds]}::text[]) and e.org_id = ${s.orgId} and e.livemode = ${s.livemode}
    order by e.seq`;
  for (const r of rows) {
    const list = out.get(r.transaction_id) ?? [];
    list.push({
      id: r.id,
      account_id: r.account_id,
      entry_type: r.entry_type,
      amount: money(r.amount),
      balance_after: r.balance_after === null ? null : money(r.balance_after),
      account: { account_type: r.account_type, entity_id: r.participant_id ?? r.owner_id ?? (r.entity_id === "" ? null : r.entity_id), name: r.name },
    });
    out.set(r.transaction_id, list);
  }
  return out;
}

/**
 * Debit and credit totals per account from the entries (the only exact history: system-account shards hold
 * no history), of the transactions whose accounting time (effective_at, else created_at) is within [from, to].
 * The transactions are found by transactions_accounted_idx (org, environment, accounting time), so a report as
 * of a past time reads only the transactions up to it. Wallets are summed per wallet type (they are the
 * sub-ledgers of one liability each); system accounts are listed one by one.
 */
export async function accountTotals(q: Q, s: Tenant, range: { from?: Date | undefined; to?: Date | undefined }): Promise<AccountTotals[]> {
  const rows = await q<
    { account_id: string; account_type: string; entity_id: string; name: string; normal_side: Side; is_wallet: boolean; debits: string; credits: string }[]
  >`
    with tr as (
      select tr.id from ledger.transactions tr
      where ${accountedWithin(q, s, range)}),
    t as (
      select e.account_id,
        coalesce(sum(e.amount) filter (where e.entry_type = 'debit'), 0)::bigint as debits,
        coalesce(sum(e.amount) filter (where e.entry_type = 'credit'), 0)::bigint as credits
      from ledger.entries e join tr on tr.id = e.transaction_id
      where e.org_id = ${s.orgId} and e.livemode = ${s.livemode}
      group by e.account_id)
    select case when a.is_wallet then a.account_type else a.id::text end as account_id, a.account_type,
      case when a.is_wallet then '' else a.entity_id end as entity_id,
      case when a.is_wallet then a.account_type else a.name end as name, a.normal_side, a.is_wallet,
      sum(t.debits)::bigint as debits, sum(t.credits)::bigint as credits
    from t join ledger.accounts a on a.id = t.account_id
    group by 1, 2, 3, 4, 5, 6
    order by 2, 3`;
  return rows.map((r) => ({ ...r, debits: money(r.debits), credits: money(r.credits) }));
}

/**
 * The condition "transaction `tr` of this org and environment, with its accounting time in [from, to]", written
 * with the very expression transactions_accounted_idx indexes so the planner can use it.
 */
function accountedWithin(q: Q, s: Tenant, range: { from?: Date | undefined; to?: Date | undefined }) {
  return q`
    tr.org_id = ${s.orgId} and tr.livemode = ${s.livemode}
    ${range.from !== undefined ? q`and coalesce(tr.effective_at, tr.created_at) >= ${range.from}` : q``}
    ${range.to !== undefined ? q`and coalesce(tr.effective_at, tr.created_at) <= ${range.to}` : q``}`;
}

/** Transactions by accounting time, oldest first, within [from, to]; paged. */
export async function transactionsByAccountingTime(
  q: Q,
  s: Tenant,
  range: { from?: Date | undefined; to?: Date | undefined },
  limit: number,
  offset: number,
): Promise<{ rows: HistoryRow[]; total: number }> {
  const rows = await q<(Omit<HistoryRow, "amount" | "reversed_amount"> & { amount: string; reversed_amount: string })[]>`
    select tr.id, tr.kind, tr.reference_id, tr.status, tr.amount, tr.reversed_amount, tr.reversal_of, tr.description, tr.metadata,
      tr.created_at, tr.effective_at, coalesce(tr.effective_at, tr.created_at) as accounted_at
    from ledger.transactions tr where ${accountedWithin(q, s, range)}
    order by coalesce(tr.effective_at, tr.created_at), tr.id limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.transactions tr where ${accountedWithin(q, s, range)}`;
  return { rows: rows.map((r) => ({ ...r, amount: money(r.amount), reversed_amount: money(r.reversed_amount) })), total: Number(count?.n ?? 0) };
}
