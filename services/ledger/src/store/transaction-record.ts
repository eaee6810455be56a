/** The SQL behind the transaction-record read: one transaction, its entries with their accounts, its sale. */
import type { Tenant } from "@treasury/contracts";
import type { RecordEntryRow, RecordRow, RecordSaleRow } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

export async function findTransactionRow(q: Q, s: Tenant, id: string): Promise<RecordRow | undefined> {
  const [row] = await q<(Omit<RecordRow, "amount"> & { amount: string })[]>`
    select id, kind, reference_id, amount, description, metadata, reversal_of, effective_at, created_at
    from ledger.transactions where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : { ...row, amount: money(row.amount) };
}

/** Entries in the order they were written; a wallet's entity is its participant or owner id. */
export async function findRecordEntries(q: Q, s: Tenant, transactionId: string): Promise<RecordEntryRow[]> {
  const rows = await q<(Omit<RecordEntryRow, "amount"> & { amount: string })[]>`
    select e.id, e.account_id, a.account_type, e.entry_type, e.amount,
      coalesce(a.participant_id, a.owner_id, nullif(a.entity_id, '')) as entity_id
    from ledger.entries e join ledger.accounts a on a.id = e.account_id
    where e.transaction_id = ${transactionId} and e.org_id = ${s.orgId} and e.livemode = ${s.livemode}
    order by e.seq`;
  return rows.map((r) => ({ ...r, amount: money(r.amount) }));
}

export async function findRecordSale(q: Q, s: Tenant, transactionId: string): Promise<RecordSaleRow | undefined> {
  const [row] = await q<(Omit<RecordSaleRow, "gross" | "sales_tax"> & { gross: string; sales_tax: string })[]>`
    select sa.sale_reference, sa.participant_id, p.display_name as participant_display_name, sa.gross, sa.sales_tax
    from ledger.sales sa
    left join ledger.participants p on p.org_id = sa.org_id and p.livemode = sa.livemode and p.participant_id = sa.participant_id
    where sa.transaction_id = ${transactionId} and sa.org_id = ${s.orgId} and sa.livemode = ${s.livemode}`;
  return row === undefined ? undefined : { ...row, gross: money(row.gross), sales_tax: money(row.sales_tax) };
}
