/** SQL of receipts (the ReceiptStore port). int8 columns are parsed into numbers once, here, with safe-integer checks. */
import { parseCents, type Tenant } from "@treasury/contracts";
import type { NewReceipt, ReceiptRow, ReceiptStore } from "../usecases/ports.ts";
import type { Sql } from "./db.ts";

type RawRow = Omit<ReceiptRow, "total_amount" | "sales_tax"> & { total_amount: string; sales_tax: string };

function parse(r: RawRow): ReceiptRow {
  return { ...r, total_amount: parseCents(r.total_amount), sales_tax: parseCents(r.sales_tax) };
}

async function insertReceipt(q: Sql, r: NewReceipt): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`
    insert into receipts.receipts (id, org_id, livemode, sale_transaction_id, checkout_session_id, order_id, external_order_id,
      total_amount, sales_tax, currency, metadata, hosted_url, merchant_name, product_name, description, sold_at)
    values (${r.id}, ${r.org_id}, ${r.livemode}, ${r.sale_transaction_id}, ${r.checkout_session_id}, ${r.order_id}, ${r.external_order_id},
      ${r.total_amount}, ${r.sales_tax}, ${r.currency}, ${q.json(r.metadata as Record<string, string>)}, ${r.hosted_url}, ${r.merchant_name},
      ${r.product_name}, ${r.description}, ${r.sold_at})
    on conflict (org_id, livemode, sale_transaction_id) do nothing
    returning *`;
  return row === undefined ? undefined : parse(row);
}

async function findReceipt(q: Sql, t: Tenant, id: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`select * from receipts.receipts where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode}`;
  return row === undefined ? undefined : parse(row);
}

async function findReceiptBySale(q: Sql, t: Tenant, saleTransactionId: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`
    select * from receipts.receipts where sale_transaction_id = ${saleTransactionId} and org_id = ${t.orgId} and livemode = ${t.livemode}`;
  return row === undefined ? undefined : parse(row);
}

async function findReceiptForPage(q: Sql, id: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`select * from receipts.receipts where id = ${id}`;
  return row === undefined ? undefined : parse(row);
}

export function pgReceiptStore(sql: Sql): ReceiptStore {
  return {
    insert: (r) => insertReceipt(sql, r),
    find: (t, id) => findReceipt(sql, t, id),
    findBySale: (t, saleTransactionId) => findReceiptBySale(sql, t, saleTransactionId),
    findForPage: (id) => findReceiptForPage(sql, id),
  };
}
