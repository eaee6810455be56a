/**
 * A checkout's sale as the sale arithmetic (@treasury/money-rules) splits it: the shares stored when the session
 * was created (what its breakdown showed), then the processor's fee once a live payment reports it. The session,
 * its completion, its event and its disputes all read the split from here.
 */
import { cents } from "@treasury/contracts";
import { chargeFee, type FeePayer, type SaleSplit } from "@treasury/money-rules";

export interface CheckoutSaleFields {
  amount: number;
  sales_tax: number;
  creator_bps: number;
  creator_amount: number;
  platform_amount: number;
  processing_fee: number;
  processing_fee_paid_by: FeePayer;
}

export function checkoutSplit(row: CheckoutSaleFields): SaleSplit {
  const shares = {
    gross: cents(row.amount),
    salesTax: cents(row.sales_tax),
    creatorBps: row.creator_bps,
    creatorShare: cents(row.creator_amount),
    platformShare: cents(row.platform_amount),
  };
  return chargeFee(shares, row.processing_fee, row.processing_fee_paid_by);
}
