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
  if (remaining <= 0) return new DomainError("sale_already_fully_refunded", `Sale ${sale.saleReference} was already fully refunded`, { extra: { remaining_amount: 0 } });
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
