/** SQL of receipts. int8 columns are parsed into numbers once, here, with safe-integer checks. */
import { parseCents } from "@treasury/contracts";
import type { Q, Scope } from "./db.ts";

export interface ReceiptRow {
  id: string;
  org_id: string;
  livemode: boolean;
  sale_transaction_id: string;
  checkout_session_id: string | null;
  order_id: string | null;
  external_order_id: string | null;
  status: "issued";
  total_amount: number;
  sales_tax: number;
  currency: string;
  metadata: Record<string, unknown>;
  hosted_url: string;
  merchant_name: string | null;
  product_name: string | null;
  description: string | null;
  sold_at: Date;
  created_at: Date;
}

type RawRow = Omit<ReceiptRow, "total_amount" | "sales_tax"> & { total_amount: string; sales_tax: string };

function parse(r: RawRow): ReceiptRow {
  return { ...r, total_amount: parseCents(r.total_amount), sales_tax: parseCents(r.sales_tax) };
}

export type NewReceipt = Omit<ReceiptRow, "status" | "created_at">;

/** Inserts a receipt; undefined when the sale already has one (the caller answers that one). */
export async function insertReceipt(q: Q, r: NewReceipt): Promise<ReceiptRow | undefined> {
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

export async function findReceipt(q: Q, s: Scope, id: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`select * from receipts.receipts where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : parse(row);
}

export async function findReceiptBySale(q: Q, s: Scope, saleTransactionId: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`
    select * from receipts.receipts where sale_transaction_id = ${saleTransactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : parse(row);
}

/** Hosted pages: the unguessable id alone authorises; the row names its org and environment. */
export async function findReceiptForPage(q: Q, id: string): Promise<ReceiptRow | undefined> {
  const [row] = await q<RawRow[]>`select * from receipts.receipts where id = ${id}`;
  return row === undefined ? undefined : parse(row);
}
