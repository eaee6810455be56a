/**
 * What a request adds to its own postings in a batch (builder.ts): an extension's derived changes (a request that
 * runs alone), or a refund's, computed from its sale's remainder as the batch has left it, by the sale arithmetic
 * (`refundParts` of @treasury/money-rules).
 */
import { cents, DomainError } from "@treasury/contracts";
import { refundParts, type SaleState } from "@treasury/money-rules";
import { refundPostings } from "../domain/refund.ts";
import type { LockedSale } from "../store/batch-reads.ts";
import type { Derived } from "../usecases/ports.ts";
import { scopeKey, type Pending, type SoloClaim } from "./pending.ts";

export type RequestChanges = { changes: Derived | undefined; sale?: { key: string; after: LockedSale } };

export function requestChanges(p: Pending, solo: SoloClaim | undefined, saleState: ReadonlyMap<string, LockedSale>): RequestChanges | DomainError {
  const plan = p.refund;
  const spec = p.req.refund;
  if (plan === undefined || spec === undefined) return { changes: solo?.derived };
  const key = scopeKey(plan.orgId, plan.livemode, plan.saleReference);
  const sale = saleState.get(key);
  if (sale === undefined) return new DomainError("original_sale_not_found", `Sale ${plan.saleReference} not found`);
  const parts = refundParts(saleStateOf(sale), spec.amount, spec.refund_from);
  if (parts instanceof DomainError) return parts;
  const cover =
    parts.fromCreator > 0 && plan.creatorWalletId !== null && plan.receivableId !== null
      ? {
          walletId: plan.creatorWalletId,
          holdId: plan.holdId,
          receivableId: plan.receivableId,
          reason: "refund",
          refuseShortfall: spec.shortfall === "refuse",
        }
      : undefined;
  const after: LockedSale = {
    ...sale,
    refunded_amount: cents(sale.refunded_amount + parts.amount),
    creator_refunded: cents(sale.creator_refunded + parts.fromCreator),
    platform_refunded: cents(sale.platform_refunded + parts.fromPlatform),
  };
  const extra = {
    refund: {
      sale_reference: plan.saleReference,
      sale_transaction_id: plan.saleTransactionId,
      participant_id: plan.participantId,
      amount: parts.amount,
      from_creator: parts.fromCreator,
      from_platform: parts.fromPlatform,
      sales_tax: parts.tax,
      refund_from: spec.refund_from,
      remaining_amount: parts.remaining,
      is_full_refund: parts.full,
      sale_gross: sale.gross,
    },
  };
  return { changes: { postings: refundPostings(plan, parts), ...(cover === undefined ? {} : { cover }), amount: parts.amount, extra }, sale: { key, after } };
}

function saleStateOf(s: LockedSale): SaleState {
  return {
    saleReference: s.sale_reference,
    gross: s.gross,
    creatorAmount: s.creator_amount,
    salesTax: s.sales_tax,
    refundedAmount: s.refunded_amount,
    creatorRefunded: s.creator_refunded,
    platformRefunded: s.platform_refunded,
    reversed: s.reversed,
  };
}
