/**
 * SQL of the aging reads (usecases/aging.ts). A receivable is the sum of its account's entries; a bill's paid part
 * is the sum of its pay-bill transactions (kind bill_payment, metadata.bill_id), each counted when its accounting
 * time is at or before the time asked.
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
      const rows = await sql<{ id: string; vendor_name: string; due_date: Date | null; accounted_at: Date; amount: string; paid: string }[]>`
        with paid as (
          select p.metadata->>'bill_id' as bill_id, sum(p.amount) as paid
          from ledger.transactions p
          where p.org_id = ${tenant.orgId} and p.livemode = ${tenant.livemode} and p.kind = 'bill_payment'
            and coalesce(p.effective_at, p.created_at) <= ${asOf}
          group by 1
        )
        select b.id, b.vendor_name, b.due_date, coalesce(t.effective_at, t.created_at) as accounted_at,
               b.amount::text as amount, coalesce(paid.paid, 0)::text as paid
        from ledger.bills b
        join ledger.transactions t on t.id = b.transaction_id
        left join paid on paid.bill_id = b.id
        where b.org_id = ${tenant.orgId} and b.livemode = ${tenant.livemode}
          and coalesce(t.effective_at, t.created_at) <= ${asOf}
          and b.amount > coalesce(paid.paid, 0)
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
