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
  s: { sale_reference: string; participant_id?: string | undefined; gross: number; creator_amount: number; platform_amount: number; sales_tax: number; processing_fee: number },
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
  refunded_amount: Cents;
  reversed: boolean;
  hold_id: string | null;
}

/**
 * The sale a transaction recorded, locked FOR UPDATE: refunds and reversals both change its remainder under
 * this lock (taken before any wallet lock).
 */
export async function lockSaleByTransaction(q: Q, s: Scope, transactionId: string): Promise<SaleRow | undefined> {
  const [row] = await q<(Omit<SaleRow, "gross" | "creator_amount" | "refunded_amount"> & { gross: string; creator_amount: string; refunded_amount: string })[]>`
    select sale_reference, transaction_id, participant_id, gross, creator_amount, refunded_amount, reversed, hold_id
    from ledger.sales where transaction_id = ${transactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}
    for update`;
  return row === undefined ? undefined : { ...row, gross: money(row.gross), creator_amount: money(row.creator_amount), refunded_amount: money(row.refunded_amount) };
}

export async function updateSaleRemainder(q: Q, s: Scope, saleReference: string, refundedAmount: number, reversed: boolean): Promise<void> {
  const res = await q`
    update ledger.sales set refunded_amount = ${refundedAmount}, reversed = ${reversed}
    where sale_reference = ${saleReference} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  if (res.count !== 1) throw new Error(`sale ${saleReference} not updated`);
}
