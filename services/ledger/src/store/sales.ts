/** Sales and their refundable remainders. */
import type { Q } from "./db.ts";
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
