/** Sales and their refundable remainders. */
import type { Tenant } from "@treasury/contracts";
import type { SaleRow } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

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
export async function lockSaleByTransaction(q: Q, s: Tenant, transactionId: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where transaction_id = ${transactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}
    for update`;
  return row === undefined ? undefined : toSale(row);
}

/** A sale by its reference, locked FOR UPDATE (the same lock as lockSaleByTransaction). */
export async function lockSaleByReference(q: Q, s: Tenant, saleReference: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}
    for update`;
  return row === undefined ? undefined : toSale(row);
}

/** A sale by its reference, unlocked (identity: its transaction, creator and hold never change). */
export async function findSale(q: Q, s: Tenant, saleReference: string): Promise<SaleRow | undefined> {
  const [row] = await q<RawSale[]>`
    select ${saleCols(q)} from ledger.sales where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : toSale(row);
}

/** The sale's remainder after a refund or reversal, by side (refunded = creator + platform, checked by the table). */
export async function updateSaleRemainder(
  q: Q,
  s: Tenant,
  saleReference: string,
  r: { refunded: number; creatorRefunded: number; platformRefunded: number; reversed: boolean },
): Promise<void> {
  const res = await q`
    update ledger.sales set refunded_amount = ${r.refunded}, creator_refunded = ${r.creatorRefunded},
      platform_refunded = ${r.platformRefunded}, reversed = ${r.reversed}
    where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  if (res.count !== 1) throw new Error(`sale ${saleReference} not updated`);
}

/** The participant of the sale a transaction recorded; undefined when it recorded none, or one without a creator. */
export async function saleParticipant(q: Q, s: Tenant, transactionId: string): Promise<string | undefined> {
  const [row] = await q<{ participant_id: string | null }[]>`
    select participant_id from ledger.sales where transaction_id = ${transactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row?.participant_id ?? undefined;
}
