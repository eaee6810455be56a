/**
 * The ledger's invariants, checked against the stored rows. Tests end with it; an operator can run it on a
 * live database (read-only queries). Returns every violation found rather than stopping at the first.
 */
import type { Q } from "./store/db.ts";

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

export async function checkInvariants(sql: Q, opts: { orgId?: string } = {}): Promise<InvariantReport> {
  const org = opts.orgId;
  const onOrg = (alias: string) => (org === undefined ? sql`true` : sql`${sql(alias)}.org_id = ${org}`);
  const checks: [string, Promise<Row[]>][] = [
    [
      "postings_sum_to_zero_per_org_env",
      sql<Row[]>`
        select e.org_id, e.livemode,
          sum(e.amount) filter (where e.entry_type = 'debit')::text as debits,
          sum(e.amount) filter (where e.entry_type = 'credit')::text as credits
        from ledger.entries e where ${onOrg("e")}
        group by e.org_id, e.livemode
        having coalesce(sum(e.amount) filter (where e.entry_type = 'debit'), 0)
            <> coalesce(sum(e.amount) filter (where e.entry_type = 'credit'), 0)`,
    ],
    [
      "transaction_balances",
      sql<Row[]>`
        select e.org_id, e.livemode, e.transaction_id,
          sum(case when e.entry_type = 'debit' then e.amount else -e.amount end)::text as imbalance
        from ledger.entries e where ${onOrg("e")}
        group by e.org_id, e.livemode, e.transaction_id
        having sum(case when e.entry_type = 'debit' then e.amount else -e.amount end) <> 0`,
    ],
    [
      "wallet_balance_equals_entries",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as stored, coalesce(s.total, 0)::text as from_entries
        from ledger.accounts a
        left join (
          select e.account_id, sum(case when e.entry_type = acc.normal_side then e.amount else -e.amount end) as total
          from ledger.entries e join ledger.accounts acc on acc.id = e.account_id
          group by e.account_id) s on s.account_id = a.id
        where a.is_wallet and ${onOrg("a")} and a.balance <> coalesce(s.total, 0)`,
    ],
    [
      "system_shards_equal_entries",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.account_type,
          coalesce(sh.total, 0)::text as stored, coalesce(s.total, 0)::text as from_entries
        from ledger.accounts a
        left join (select account_id, sum(balance) as total from ledger.account_balance_shards group by account_id) sh
          on sh.account_id = a.id
        left join (
          select e.account_id, sum(case when e.entry_type = acc.normal_side then e.amount else -e.amount end) as total
          from ledger.entries e join ledger.accounts acc on acc.id = e.account_id
          group by e.account_id) s on s.account_id = a.id
        where not a.is_wallet and ${onOrg("a")} and coalesce(sh.total, 0) <> coalesce(s.total, 0)`,
    ],
    [
      "wallet_not_negative",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as balance, a.held_amount::text as held_amount
        from ledger.accounts a
        where a.is_wallet and ${onOrg("a")} and (a.balance < 0 or a.held_amount < 0 or a.held_amount > a.balance)`,
    ],
    [
      "held_equals_active_holds",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.held_amount::text as stored, coalesce(h.total, 0)::text as from_holds
        from ledger.accounts a
        left join (select wallet_id, sum(amount) as total from ledger.holds where status = 'held' group by wallet_id) h
          on h.wallet_id = a.id
        where a.is_wallet and ${onOrg("a")} and a.held_amount <> coalesce(h.total, 0)`,
    ],
    [
      "wallet_last_balance_after",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.balance::text as stored, last.balance_after::text as last_balance_after
        from ledger.accounts a
        join lateral (select e.balance_after from ledger.entries e where e.account_id = a.id order by e.seq desc limit 1) last on true
        where a.is_wallet and ${onOrg("a")} and last.balance_after is distinct from a.balance`,
    ],
    [
      "creator_receivable_not_negative",
      sql<Row[]>`
        select a.org_id, a.livemode, a.id as account_id, a.entity_id, sum(sh.balance)::text as balance
        from ledger.accounts a join ledger.account_balance_shards sh on sh.account_id = a.id
        where a.account_type = 'creator_receivable' and ${onOrg("a")}
        group by a.org_id, a.livemode, a.id, a.entity_id
        having sum(sh.balance) < 0`,
    ],
    [
      "reversals_within_the_original",
      sql<Row[]>`
        select t.org_id, t.livemode, t.id as transaction_id, t.amount::text as amount, t.reversed_amount::text as reversed_amount,
          coalesce(r.total, 0)::text as reversal_total
        from ledger.transactions t
        left join (select reversal_of, sum(amount) as total from ledger.transactions where reversal_of is not null group by reversal_of) r
          on r.reversal_of = t.id
        left join ledger.sales sale on sale.transaction_id = t.id
        where ${onOrg("t")} and (t.reversed_amount <> coalesce(r.total, 0)
          or (sale.transaction_id is null and (t.reversed_amount > t.amount or (t.status = 'reversed') <> (t.amount > 0 and t.reversed_amount = t.amount)))
          or (sale.transaction_id is not null and t.status = 'reversed' and sale.refunded_amount <> sale.gross))`,
    ],
    [
      "rows_stay_in_their_org_and_environment",
      sql<Row[]>`
        select e.org_id, e.livemode, e.id as entry_id, a.org_id as account_org, t.org_id as transaction_org
        from ledger.entries e
        join ledger.accounts a on a.id = e.account_id
        join ledger.transactions t on t.id = e.transaction_id
        where ${onOrg("e")} and (a.org_id <> e.org_id or a.livemode <> e.livemode or t.org_id <> e.org_id or t.livemode <> e.livemode)
        union all
        select h.org_id, h.livemode, h.id, a.org_id, null
        from ledger.holds h join ledger.accounts a on a.id = h.wallet_id
        where ${onOrg("h")} and (a.org_id <> h.org_id or a.livemode <> h.livemode)`,
    ],
  ];
  const violations: InvariantViolationRow[] = [];
  for (const [invariant, query] of checks) {
    for (const { org_id, livemode, ...detail } of await query) violations.push({ invariant, org_id, livemode, detail });
  }
  return { ok: violations.length === 0, violations };
}
