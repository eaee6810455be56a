/**
 * A sale refund's accounts and postings. What a refund takes from each side of the sale is decided by the sale
 * arithmetic (`refundParts` in @treasury/money-rules); the ledger reads the sale under its lock, asks for the
 * parts, and posts them here.
 */
import type { Cents } from "@treasury/contracts";
import type { RefundParts } from "@treasury/money-rules";
import type { Side } from "./accounts.ts";

/** The transaction kind of a sale refund. */
export const KIND_REFUND = "refund";

/**
 * What a refund needs to know about its sale that never changes once the sale is recorded: where its money came
 * from, the creator's wallet, hold and receivable, and the platform-side accounts. Read before the transaction;
 * the sale's remainder itself is read under the sale row's lock inside it.
 */
export interface RefundPlan {
  orgId: string;
  livemode: boolean;
  saleReference: string;
  saleTransactionId: string;
  participantId: string | null;
  /** The account the sale's money came from (platform cash, or the buyer's wallet). */
  sourceId: string;
  creatorWalletId: string | null;
  holdId: string | null;
  receivableId: string | null;
  taxId: string;
  revenueId: string;
  /** The normal side of each system account above (the engine needs it for accounts named by id). */
  systemNormals: readonly (readonly [string, Side])[];
}

/** The postings of a refund's parts: each side gives back to the sale's source. */
export function refundPostings(plan: RefundPlan, parts: RefundParts): { debit: string; credit: string; amount: Cents }[] {
  const out: { debit: string; credit: string; amount: Cents }[] = [];
  if (parts.fromCreator > 0) {
    if (plan.creatorWalletId === null) throw new Error(`sale ${plan.saleReference} has a creator part but no creator wallet`);
    out.push({ debit: plan.creatorWalletId, credit: plan.sourceId, amount: parts.fromCreator });
  }
  if (parts.tax > 0) out.push({ debit: plan.taxId, credit: plan.sourceId, amount: parts.tax });
  if (parts.revenue > 0) out.push({ debit: plan.revenueId, credit: plan.sourceId, amount: parts.revenue });
  return out;
}
