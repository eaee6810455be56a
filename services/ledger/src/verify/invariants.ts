/**
 * The ledger's invariants, checked against the stored rows. Tests end with it; an operator can run it on a
 * live database (read-only queries). Returns every violation found rather than stopping at the first.
 */
import type { Fragment, Q } from "../store/db.ts";

export interface InvariantViolationRow {
  invariant: string;
  org_id: string;
  livemode: boolean;
  detail: Record<string, unknown>;
}

export interface InvariantReport {
  ok: boolean;
  violations: InvariantViolationRow[];
}

type Row = { org_id: string; livemode: boolean } & Record<string, unknown>;
/** The condition that keeps a check to one org (every row when the check covers them all), on a table's alias. */
type OnOrg = (alias: string) => Fragment;
type Check = (sql: Q, onOrg: OnOrg) => Promise<Row[]>;

export async function checkInvariants(sql: Q, opts: { orgId?: string } = {}): Promise<InvariantReport> {
  const org = opts.orgId;
  const onOrg: OnOrg = (alias) => (org === undefined ? sql`true` : sql`${sql(alias)}.org_id = ${org}`);
  // Every check is sent at once (pipelined on one connection), then their rows read in order.
  const checks = INVARIANTS.map(([invariant, check]) => [invariant, check(sql, onOrg)] as const);
  const violations: InvariantViolationRow[] = [];
  for (const [invariant, query] of checks) {
    for (const { org_id, livemode, ...detail } of await query) violations.push({ invariant, org_id, livemode, detail });
  }
  return { ok: violations.length === 0, violations };
}

/** Each invariant by the name its violations carry (and the ledger_invariant_violations metric's label). */
const INVARIANTS: readonly (readonly [string, Check])[] = [
  ["postings_sum_to_zero_per_org_env", postingsSumToZeroPerOrgEnv],
  ["transaction_balances", transactionBalances],
  ["wallet_balance_equals_entries", walletBalanceEqualsEntries],
  ["system_shards_equal_entries", systemShardsEqualEntries],
  ["wallet_not_negative", walletNotNegative],
  ["held_equals_active_holds", heldEqualsActiveHolds],
  ["wallet_last_balance_after", walletLastBalanceAfter],
  ["creator_receivable_not_negative", creatorReceivableNotNegative],
  ["reversals_within_the_original", reversalsWithinTheOriginal],
  ["rows_stay_in_their_org_and_environment", rowsStayInTheirOrgAndEnvironment],
];

/** Every org and environment's debits equal its credits. */
function postingsSumToZeroPerOrgEnv(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select e.org_id, e.livemode,
          sum(e.amount) filter (where e.entry_type = 'debit')::text as debits,
          sum(e.amount) filter (where e.entry_type = 'credit')::text as credits
        from ledger.entries e where ${onOrg("e")}
        group by e.org_id, e.livemode
        having coalesce(sum(e.amount) filter (where e.entry_type = 'debit'), 0)
            <> coalesce(sum(e.amount) filter (where e.entry_type = 'credit'), 0)`;
}

/** Every transaction's debits equal its credits. */
function transactionBalances(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select e.org_id, e.livemode, e.transaction_id,
          sum(case when e.entry_type = 'debit' then e.amount else -e.amount end)::text as imbalance
        from ledger.entries e where ${onOrg("e")}
        group by e.org_id, e.livemode, e.transaction_id
        having sum(case when e.entry_type = 'debit' then e.amount else -e.amount end) <> 0`;
}

/** A wallet's stored balance is what its entries add up to. */
function walletBalanceEqualsEntries(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as stored, coalesce(s.total, 0)::text as from_entries
        from ledger.accounts a
        left join (
          select e.account_id, sum(case when e.entry_type = acc.normal_side then e.amount else -e.amount end) as total
          from ledger.entries e join ledger.accounts acc on acc.id = e.account_id
          group by e.account_id) s on s.account_id = a.id
        where a.is_wallet and ${onOrg("a")} and a.balance <> coalesce(s.total, 0)`;
}

/** A system account's balance shards add up to what its entries do. */
function systemShardsEqualEntries(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.account_type,
          coalesce(sh.total, 0)::text as stored, coalesce(s.total, 0)::text as from_entries
        from ledger.accounts a
        left join (select account_id, sum(balance) as total from ledger.account_balance_shards group by account_id) sh
          on sh.account_id = a.id
        left join (
          select e.account_id, sum(case when e.entry_type = acc.normal_side then e.amount else -e.amount end) as total
          from ledger.entries e join ledger.accounts acc on acc.id = e.account_id
          group by e.account_id) s on s.account_id = a.id
        where not a.is_wallet and ${onOrg("a")} and coalesce(sh.total, 0) <> coalesce(s.total, 0)`;
}

/** No wallet is negative or holds more than its balance. */
function walletNotNegative(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as balance, a.held_amount::text as held_amount
        from ledger.accounts a
        where a.is_wallet and ${onOrg("a")} and (a.balance < 0 or a.held_amount < 0 or a.held_amount > a.balance)`;
}

/** A wallet's held amount is the sum of its active holds. */
function heldEqualsActiveHolds(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.held_amount::text as stored, coalesce(h.total, 0)::text as from_holds
        from ledger.accounts a
        left join (select wallet_id, sum(amount) as total from ledger.holds where status = 'held' group by wallet_id) h
          on h.wallet_id = a.id
        where a.is_wallet and ${onOrg("a")} and a.held_amount <> coalesce(h.total, 0)`;
}

/** A wallet's last entry's balance_after is its stored balance. */
function walletLastBalanceAfter(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as stored, last.balance_after::text as last_balance_after
        from ledger.accounts a
        join lateral (select e.balance_after from ledger.entries e where e.account_id = a.id order by e.seq desc limit 1) last on true
        where a.is_wallet and ${onOrg("a")} and last.balance_after is distinct from a.balance`;
}

/** No creator owes the platform a negative amount. */
function creatorReceivableNotNegative(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.entity_id, sum(sh.balance)::text as balance
        from ledger.accounts a join ledger.account_balance_shards sh on sh.account_id = a.id
        where a.account_type = 'creator_receivable' and ${onOrg("a")}
        group by a.org_id, a.livemode, a.id, a.entity_id
        having sum(sh.balance) < 0`;
}

/** Reversals stay within their original, and a reversed transaction (or sale) is reversed in full. */
function reversalsWithinTheOriginal(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select t.org_id, t.livemode, t.id as transaction_id, t.amount::text as amount, t.reversed_amount::text as reversed_amount,
          coalesce(r.total, 0)::text as reversal_total
        from ledger.transactions t
        left join (select reversal_of, sum(amount) as total from ledger.transactions where reversal_of is not null group by reversal_of) r
          on r.reversal_of = t.id
        left join ledger.sales sale on sale.transaction_id = t.id
        where ${onOrg("t")} and (t.reversed_amount <> coalesce(r.total, 0)
          or (sale.transaction_id is null and (t.reversed_amount > t.amount or (t.status = 'reversed') <> (t.amount > 0 and t.reversed_amount = t.amount)))
          or (sale.transaction_id is not null and t.status = 'reversed' and sale.refunded_amount <> sale.gross))`;
}

/** Entries and holds stay in the org and environment of their accounts and transactions. */
function rowsStayInTheirOrgAndEnvironment(sql: Q, onOrg: OnOrg): Promise<Row[]> {
  return sql<Row[]>`
        select e.org_id, e.livemode, e.id as entry_id, a.org_id as account_org, t.org_id as transaction_org
        from ledger.entries e
        join ledger.accounts a on a.id = e.account_id
        join ledger.transactions t on t.id = e.transaction_id
        where ${onOrg("e")} and (a.org_id <> e.org_id or a.livemode <> e.livemode or t.org_id <> e.org_id or t.livemode <> e.livemode)
        union all
        select h.org_id, h.livemode, h.id, a.org_id, null
        from ledger.holds h join ledger.accounts a on a.id = h.wallet_id
        where ${onOrg("h")} and (a.org_id <> h.org_id or a.livemode <> h.livemode)`;
}
