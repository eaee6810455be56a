/**
 * The arithmetic of a sale refund (pure). A sale has two sides: the creator's part (creator_amount) and the
 * platform's (everything else of the gross: its revenue and the sales tax it collected). A refund takes an
 * amount back from one side or both; the platform side gives back tax and revenue in proportion.
 *
 * Every split is "cumulative target minus already refunded": the target after this refund is
 * floor(side × refunded_after / total), so rounding never accumulates and any sequence of partial refunds ends
 * exactly where one full refund would, to the cent, on both sides.
 */
import { cents, DomainError, type Cents, type RefundFrom } from "@treasury/contracts";
import type { Side } from "./accounts.ts";

/** The transaction kind of a sale refund. */
export const KIND_REFUND = "refund";

/** What the sale row holds about its remainder (locked by the caller). */
export interface SaleState {
  saleReference: string;
  gross: Cents;
  creatorAmount: Cents;
  salesTax: Cents;
  refundedAmount: Cents;
  creatorRefunded: Cents;
  platformRefunded: Cents;
  reversed: boolean;
}

export interface RefundParts {
  amount: Cents;
  fromCreator: Cents;
  fromPlatform: Cents;
  /** Of fromPlatform: the sales tax given back (the rest comes from platform revenue). */
  tax: Cents;
  revenue: Cents;
  /** The sale's remainder after this refund. */
  remaining: Cents;
  /** The refund leaves nothing refundable. */
  full: boolean;
}

/** floor(part × done / total) in exact integer arithmetic (0 when total is 0). */
function target(part: number, done: number, total: number): number {
  if (total === 0) return 0;
  return Number((BigInt(part) * BigInt(done)) / BigInt(total));
}

function exceeds(remaining: number, side: string): DomainError {
  return new DomainError("refund_amount_exceeds_remaining", `The refund exceeds the ${remaining} that remains refundable${side}`, {
    extra: { remaining_amount: remaining },
    hint: `POST /v1/refunds with amount at most ${remaining}`,
  });
}

/**
 * The parts of a refund of `asked` (undefined: all that remains on the side refund_from names), or why it
 * cannot be made.
 */
export function refundParts(sale: SaleState, asked: number | undefined, from: RefundFrom): RefundParts | DomainError {
  if (sale.reversed) return new DomainError("sale_already_reversed", `Sale ${sale.saleReference} was reversed and cannot be refunded`);
  const remaining = sale.gross - sale.refundedAmount;
  if (remaining <= 0)
    return new DomainError("sale_already_fully_refunded", `Sale ${sale.saleReference} was already fully refunded`, { extra: { remaining_amount: 0 } });
  const platformTotal = sale.gross - sale.creatorAmount;
  const creatorLeft = sale.creatorAmount - sale.creatorRefunded;
  const platformLeft = platformTotal - sale.platformRefunded;
  const sideLeft = from === "creator_only" ? creatorLeft : from === "platform_only" ? platformLeft : remaining;
  const amount = asked ?? sideLeft;
  if (amount <= 0) return exceeds(0, from === "both" ? "" : ` from the ${from === "creator_only" ? "creator" : "platform"}`);
  if (amount > sideLeft) return exceeds(sideLeft, from === "both" ? "" : ` from the ${from === "creator_only" ? "creator" : "platform"}`);

  let fromCreator: number;
  if (from === "creator_only") fromCreator = amount;
  else if (from === "platform_only") fromCreator = 0;
  else {
    // Pro rata to the original split, cumulatively; within what each side still has.
    const wanted = target(sale.creatorAmount, sale.refundedAmount + amount, sale.gross) - sale.creatorRefunded;
    fromCreator = Math.min(Math.max(wanted, 0), amount, creatorLeft);
    if (amount - fromCreator > platformLeft) fromCreator = amount - platformLeft;
  }
  const fromPlatform = amount - fromCreator;
  // The platform side gives back tax in proportion to what it has given back in all.
  const tax = target(sale.salesTax, sale.platformRefunded + fromPlatform, platformTotal) - target(sale.salesTax, sale.platformRefunded, platformTotal);
  const after = remaining - amount;
  return {
    amount: cents(amount),
    fromCreator: cents(fromCreator),
    fromPlatform: cents(fromPlatform),
    tax: cents(tax),
    revenue: cents(fromPlatform - tax),
    remaining: cents(after),
    full: after === 0,
  };
}

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
