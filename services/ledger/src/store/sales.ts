/** Sales and their refundable remainders. */
import type { Cents } from "@treasury/contracts";
import { money, type Q } from "./db.ts";
import type { Scope } from "./accounts.ts";

export interface NewSale {
  saleReference: string;
  transactionId: string;
  participantId: string | null;
  gross: number;
  creatorAmount: number;
  platformAmount: number;
  salesTax: number;
  processingFee: number;
  holdId: string | null;
}

/** The sale row a posting request's `sale` asks for, recorded by transaction `transactionId`. */
export function newSale(
  s: {
    sale_reference: string;
    participant_id?: string | undefined;
    gross: number;
    creator_amount: number;
    platform_amount: number;
    sales_tax: number;
    processing_fee: number;
  },
  transactionId: string,
  holdId: string | null,
): NewSale {
  return {
    saleReference: s.sale_reference,
    transactionId,
    participantId: s.participant_id ?? null,
    gross: s.gross,
    creatorAmount: s.creator_amount,
    platformAmount: s.platform_amount,
    salesTax: s.sales_tax,
    processingFee: s.processing_fee,
    holdId,
  };
}

/** Records a sale; answers false when the sale reference already exists (a second recording of it). */
export async function insertSale(q: Q, s: Scope, sale: NewSale): Promise<boolean> {
  const res = await q`
    insert into ledger.sales (org_id, livemode, sale_reference, transaction_id, participant_id, gross, creator_amount,
      platform_amount, sales_tax, processing_fee, hold_id)
    values (${s.orgId}, ${s.livemode}, ${sale.saleReference}, ${sale.transactionId}, ${sale.participantId}, ${sale.gross},
      ${sale.creatorAmount}, ${sale.platformAmount}, ${sale.salesTax}, ${sale.processingFee}, ${sale.holdId})
    on conflict (org_id, livemode, sale_reference) do nothing`;
  return res.count === 1;
}

export interface SaleRow {
  sale_reference: string;
  transaction_id: string;
  participant_id: string | null;
  gross: Cents;
  creator_amount: Cents;
  sales_tax: Cents;
  refunded_amount: Cents;
  creator_refunded: Cents;
  platform_refunded: Cents;
  reversed: boolean;
  hold_id: string | null;
}

type RawSale = Omit<SaleRow, "gross" | "creator_amount" | "sales_tax" | "refunded_amount" | "creator_refunded" | "platform_refunded"> &
  Record<"gross" | "creator_amount" | "sales_tax" | "refunded_amount" | "creator_refunded" | "platform_refunded", string>;

const saleCols = (q: Q) => q`
  sale_reference, transaction_id, participant_id, gross, creator_amount, sales_tax, refunded_amount, creator_refunded,
  platform_refunded, reversed, hold_id`;

function toSale(r: RawSale): SaleRow {
  return {
    ...r,
    gross: money(r.gross),
    creator_amount: money(r.creator_amount),
    sales_tax: money(r.sales_tax),
    refunded_amount: money(r.refunded_amount),
    creator_refunded: money(r.creator_refunded),
    platform_refunded: money(r.platform_refunded),
  };
}

/**
 * The sale a transaction recorded, locked FOR UPDATE: refunds and reversals both change its remainder under
 * this lock (taken before any wallet lock).
 */
export async function lockSaleByTransaction(q: Q, s: Scope, transactionId: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where transaction_id = ${transactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}
    for update`;
  return row === undefined ? undefined : toSale(row);
}

/** A sale by its reference, locked FOR UPDATE (the same lock as lockSaleByTransaction). */
export async function lockSaleByReference(q: Q, s: Scope, saleReference: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}
    for update`;
  return row === undefined ? undefined : toSale(row);
}

/** A sale by its reference, unlocked (identity: its transaction, creator and hold never change). */
export async function findSale(q: Q, s: Scope, saleReference: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : toSale(row);
}

/** The sale's remainder after a refund or reversal, by side (refunded = creator + platform, checked by the table). */
export async function updateSaleRemainder(
  q: Q,
  s: Scope,
  saleReference: string,
  r: { refunded: number; creatorRefunded: number; platformRefunded: number; reversed: boolean },
): Promise<void> {
  const res = await q`
    update ledger.sales set refunded_amount = ${r.refunded}, creator_refunded = ${r.creatorRefunded},
      platform_refunded = ${r.platformRefunded}, reversed = ${r.reversed}
    where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  if (res.count !== 1) throw new Error(`sale ${saleReference} not updated`);
}
