/**
 * SQL of the aging reads (usecases/aging.ts). A receivable is the sum of its account's entries; a bill's amount and
 * paid part are the accounts_payable entries of its record-bill and of its pay-bill transactions (kind
 * bill_payment, metadata.bill_id), each net of their reversals, every entry counted when its transaction's
 * accounting time is at or before the time asked.
 */
import { parseCents } from "@treasury/contracts";
import type { Sql } from "@treasury/service-kit";
import type { AgingReader } from "../usecases/aging.ts";

export function pgAgingReader(sql: Sql): AgingReader {
  return {
    async receivableBalances(tenant, asOf, limit) {
      const rows = await sql<{ invoice_id: string; balance: string }[]>`
        select a.entity_id as invoice_id,
               sum(case when e.entry_type = 'debit' then e.amount else -e.amount end)::text as balance
        from ledger.accounts a
        join ledger.entries e on e.account_id = a.id
        join ledger.transactions t on t.id = e.transaction_id
        where a.org_id = ${tenant.orgId} and a.livemode = ${tenant.livemode} and a.account_type = 'accounts_receivable'
          and coalesce(t.effective_at, t.created_at) <= ${asOf}
        group by a.entity_id
        having sum(case when e.entry_type = 'debit' then e.amount else -e.amount end) <> 0
        order by a.entity_id
        limit ${limit}`;
      return rows.map((r) => ({ invoice_id: r.invoice_id, balance_cents: Number(BigInt(r.balance)) }));
    },
    async openBills(tenant, asOf, limit) {
      // Each bill's transactions (its record-bill, its pay-bills) and every reversal of them, by their entries on
      // accounts_payable: a reversed bill owes nothing, a reversed payment owes again, partial reversals in part.
      const rows = await sql<{ id: string; vendor_name: string; due_date: Date | null; accounted_at: Date; amount: string; paid: string }[]>`
        with parts as (
          select b.id as bill_id, b.transaction_id as tx_id, true as is_bill
          from ledger.bills b
          where b.org_id = ${tenant.orgId} and b.livemode = ${tenant.livemode}
          union all
          select p.metadata->>'bill_id', p.id, false
          from ledger.transactions p
          where p.org_id = ${tenant.orgId} and p.livemode = ${tenant.livemode} and p.kind = 'bill_payment'
        ),
        moves as (
          select parts.bill_id, parts.is_bill, parts.tx_id as id from parts
          union all
          select parts.bill_id, parts.is_bill, r.id
          from parts join ledger.transactions r on r.reversal_of = parts.tx_id
          where r.org_id = ${tenant.orgId} and r.livemode = ${tenant.livemode}
        ),
        owed as (
          select m.bill_id,
                 coalesce(sum(case when m.is_bill then (case when e.entry_type = 'credit' then e.amount else -e.amount end) end), 0) as amount,
                 coalesce(sum(case when not m.is_bill then (case when e.entry_type = 'debit' then e.amount else -e.amount end) end), 0) as paid
          from moves m
          join ledger.transactions t on t.id = m.id
          join ledger.entries e on e.transaction_id = m.id
          join ledger.accounts a on a.id = e.account_id and a.account_type = 'accounts_payable'
          where coalesce(t.effective_at, t.created_at) <= ${asOf}
          group by m.bill_id
        )
        select b.id, b.vendor_name, b.due_date, coalesce(t.effective_at, t.created_at) as accounted_at,
               owed.amount::text as amount, owed.paid::text as paid
        from ledger.bills b
        join ledger.transactions t on t.id = b.transaction_id
        join owed on owed.bill_id = b.id
        where b.org_id = ${tenant.orgId} and b.livemode = ${tenant.livemode}
          and coalesce(t.effective_at, t.created_at) <= ${asOf}
          and owed.amount > owed.paid
        order by b.id
        limit ${limit}`;
      return rows.map((r) => ({
        bill_id: r.id,
        vendor_name: r.vendor_name,
        due_date: r.due_date?.toISOString() ?? null,
        accounted_at: r.accounted_at.toISOString(),
        amount_cents: parseCents(r.amount),
        paid_cents: parseCents(r.paid),
      }));
    },
  };
}
