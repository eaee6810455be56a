/**
 * Who gets what of a sale: the one place that decides it (docs/adr/0014-one-sale-arithmetic.md). Pure integer
 * arithmetic in cents and basis points, no I/O:
 *
 * 1. The sales tax comes off the top: it is the tax authority's.
 * 2. The creator gets floor((gross − sales tax) × bps / 10000) and the platform the rest, so the rounding
 *    remainder is the platform's and the parts always sum to the gross.
 * 3. A card processor's fee is charged as processing_fee_paid_by says: to the platform, to the creator, or split
 *    (creator floor(fee / 2), platform the rest). The creator's part is at most the creator's share; the platform
 *    bears any excess.
 *
 * Checkouts, shared-wallet spends and record-sale split with `splitSale` (or `shareSale` then `chargeFee` when the
 * fee is known only once the payment happened). A dispute's hold (`disputeParts`), a refund (`refundParts`) and
 * a reversal (`reversalAmount`, `reversalShare`, `reversalSides`) take money back pro rata to that split,
 * cumulatively, so they always sum to what they take.
 */
import { cents, DomainError, percentToBps, shareOf, type Cents, type RefundFrom } from "@treasury/contracts";

export type FeePayer = "platform" | "creator" | "split";

/** The creator's share when neither the request nor the participant names one (docs/api.md: 80 %). */
export const DEFAULT_CREATOR_BPS = 8000;
/** Who bears a processor's fee when the request does not say (docs/api.md, record-sale and live checkouts). */
export const DEFAULT_FEE_PAYER: FeePayer = "platform";

/** The creator's basis points: the request's percent, else the participant's default, else DEFAULT_CREATOR_BPS. */
export function creatorBpsFor(requestPercent: number | undefined, participantBps: number | null | undefined): number {
  if (requestPercent !== undefined) return percentToBps(requestPercent);
  return participantBps ?? DEFAULT_CREATOR_BPS;
}

export interface SaleProblem {
  path: "sales_tax" | "processing_fee";
  message: string;
}

/**
 * Why amounts a client states (a checkout, a spend, record-sale) cannot be split: a tax above the gross, or a tax
 * and a fee together above it. A fee the processor took on a payment that happened is never refused.
 */
export function saleInputProblem(gross: number, salesTax: number, processingFee = 0): SaleProblem | undefined {
  if (salesTax > gross) return { path: "sales_tax", message: "must not exceed amount" };
  if (salesTax + processingFee > gross) return { path: "processing_fee", message: "processing_fee plus sales_tax must not exceed amount" };
  return undefined;
}

/** A sale's shares before any processor fee: what a checkout shows when it is created. */
export interface SaleShares {
  gross: Cents;
  salesTax: Cents;
  creatorBps: number;
  /** floor((gross − sales tax) × bps / 10000). */
  creatorShare: Cents;
  /** The rest of gross − sales tax, rounding remainder included. */
  platformShare: Cents;
}

/** Throws RangeError on a tax outside 0–gross or bps outside 0–10000: callers check client input first. */
export function shareSale(gross: Cents, salesTax: Cents, creatorBps: number): SaleShares {
  if (salesTax < 0 || salesTax > gross) throw new RangeError(`sales tax ${salesTax} out of range for gross ${gross}`);
  if (!Number.isInteger(creatorBps) || creatorBps < 0 || creatorBps > 10_000) throw new RangeError(`bps out of range: ${creatorBps}`);
  const net = cents(gross - salesTax);
  const creatorShare = shareOf(net, creatorBps);
  const shares = { gross, salesTax, creatorBps, creatorShare, platformShare: cents(net - creatorShare) };
  assertShares(shares);
  return shares;
}

/** A sale's split once its processor fee is known (0 for a sale no processor took a fee of). */
export interface SaleSplit extends SaleShares {
  processingFee: Cents;
  feePaidBy: FeePayer;
  /** The part of the fee the creator bears: what feePaidBy asks, at most the creator's share. */
  creatorFee: Cents;
  /** The rest of the fee: the platform's, including what the creator's share could not bear. */
  platformFee: Cents;
  /** creatorShare − creatorFee: never negative. */
  creatorAmount: Cents;
  /** platformShare − platformFee: negative when the platform's part of the fee exceeds its share. */
  platformAmount: Cents;
  /** creatorAmount + platformAmount = gross − sales tax − fee. */
  net: Cents;
}

/**
 * Charges a processor's fee to a sale's shares. The fee policy (ADR 0014): the creator bears what feePaidBy asks
 * but never more than its share, and the platform bears the excess, because a checkout's payment has already
 * happened and cannot be refused, and every path must split a sale the same way.
 */
export function chargeFee(shares: SaleShares, fee: number, feePaidBy: FeePayer): SaleSplit {
  assertShares(shares);
  if (!Number.isSafeInteger(fee) || fee < 0) throw new RangeError(`processing fee out of range: ${fee}`);
  const asked = feePaidBy === "creator" ? fee : feePaidBy === "split" ? Math.floor(fee / 2) : 0;
  const creatorFee = cents(Math.min(asked, shares.creatorShare));
  const platformFee = cents(fee - creatorFee);
  const creatorAmount = cents(shares.creatorShare - creatorFee);
  const platformAmount = cents(shares.platformShare - platformFee);
  const split: SaleSplit = {
    ...shares,
    processingFee: cents(fee),
    feePaidBy,
    creatorFee,
    platformFee,
    creatorAmount,
    platformAmount,
    net: cents(creatorAmount + platformAmount),
  };
  // A split that does not add up is a bug, never a client error.
  if (split.creatorAmount + split.platformAmount + split.processingFee + split.salesTax !== split.gross || creatorAmount < 0) {
    throw new Error(`sale split does not sum to the gross: ${JSON.stringify(split)}`);
  }
  return split;
}

export interface SaleInput {
  gross: number;
  salesTax: number;
  processingFee: number;
  feePaidBy: FeePayer;
  creatorBps: number;
}

/** The whole split of a sale whose fee is known up front (record-sale, a spend with no fee). */
export function splitSale(input: SaleInput): SaleSplit {
  return chargeFee(shareSale(cents(input.gross), cents(input.salesTax), input.creatorBps), input.processingFee, input.feePaidBy);
}

function assertShares(s: SaleShares): void {
  if (s.creatorShare < 0 || s.platformShare < 0 || s.salesTax < 0 || s.creatorShare + s.platformShare + s.salesTax !== s.gross) {
    throw new Error(`sale shares do not sum to the gross: ${JSON.stringify(s)}`);
  }
}

/** floor(part × done / total) in exact integer arithmetic (0 when total is 0). */
function target(part: number, done: number, total: number): number {
  if (total === 0) return 0;
  return Number((BigInt(part) * BigInt(done)) / BigInt(total));
}

export interface DisputeParts {
  /** The disputed amount: what the processor reports, at most the sale's gross. */
  amount: Cents;
  /** The creator's part of it, pro rata to the sale's split after its fee. */
  fromCreator: Cents;
  fromPlatform: Cents;
}

/**
 * The parts of a dispute of `reported` cents of a sale. The creator's part is what a first refund of the disputed
 * amount takes from the creator (refundParts), so the hold a dispute places is what losing it takes back.
 */
export function disputeParts(sale: { gross: number; creatorAmount: number }, reported: number): DisputeParts {
  if (!Number.isSafeInteger(reported) || reported < 0) throw new RangeError(`disputed amount out of range: ${reported}`);
  if (sale.creatorAmount < 0 || sale.creatorAmount > sale.gross) throw new RangeError(`creator amount out of range: ${JSON.stringify(sale)}`);
  const amount = Math.min(reported, sale.gross);
  const fromCreator = target(sale.creatorAmount, amount, sale.gross);
  return { amount: cents(amount), fromCreator: cents(fromCreator), fromPlatform: cents(amount - fromCreator) };
}

/*
 * Refunds. A sale has two sides: the creator's part (creator_amount) and the platform's (everything else of the
 * gross: its revenue and the sales tax it collected). A refund takes an amount back from one side or both; the
 * platform side gives back tax and revenue in proportion.
 *
 * Every split is "cumulative target minus already refunded": the target after this refund is
 * floor(side × refunded_after / total), so rounding never accumulates and any sequence of partial refunds ends
 * exactly where one full refund would, to the cent, on both sides.
 */

/** What the ledger's sale row holds about its remainder (locked by the caller). */
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

/*
 * Reversals. A reversal takes back `reversedBefore → reversedAfter` of a transaction's `total` (a sale's gross, or
 * the transaction's amount). Each original part (every posting of it, a sale's creator side) is taken back by its
 * cumulative share: floor(part × after / total) − floor(part × before / total), so several partial reversals end
 * exactly where one full reversal would.
 */

/**
 * What a reversal takes back: `partial` (undefined: all that remains of `total` once `reversedBefore` is taken),
 * or why it cannot.
 */
export function reversalAmount(total: number, reversedBefore: number, partial: number | undefined): Cents | DomainError {
  const remaining = total - reversedBefore;
  if (total <= 0 || remaining <= 0) {
    return new DomainError("reversal_amount_exceeds_remaining", "Nothing of this transaction remains to reverse", { extra: { remaining_amount: 0 } });
  }
  const amount = partial ?? remaining;
  if (amount > remaining) {
    return new DomainError("reversal_amount_exceeds_remaining", `partial_amount ${amount} exceeds the unreversed ${remaining}`, {
      extra: { remaining_amount: remaining },
      hint: `POST /v1/reverse-transaction with partial_amount at most ${remaining}, or without it to reverse the rest`,
    });
  }
  return cents(amount);
}

/** The part of `part` (one posting's amount) a reversal of `reversedBefore → reversedAfter` out of `total` takes back. */
export function reversalShare(part: number, total: number, reversedBefore: number, reversedAfter: number): Cents {
  return cents(target(part, reversedAfter, total) - target(part, reversedBefore, total));
}

/** A sale's remainder by side, as its row keeps it (refunds and reversals both move it). */
export interface SaleSides {
  /** The creator's side of the gross (everything else is the platform's). */
  creatorAmount: number;
  /** What refunds and reversals have taken back from the creator's side so far. */
  creatorRefunded: number;
}

/**
 * A sale's sides once a reversal brought what is taken back of it from `reversedBefore` to `reversedAfter` (out of
 * its gross, `total`): the creator's side gives back its cumulative share, within what it has and no less than the
 * platform's side cannot cover; the platform's side the rest. The sides always sum to `reversedAfter`, and a full
 * reversal leaves each side given back whole.
 */
export function reversalSides(
  sale: SaleSides,
  total: number,
  reversedBefore: number,
  reversedAfter: number,
): { creatorRefunded: Cents; platformRefunded: Cents } {
  const platformTotal = total - sale.creatorAmount;
  const share = reversalShare(sale.creatorAmount, total, reversedBefore, reversedAfter);
  const creatorRefunded = Math.min(Math.max(sale.creatorRefunded + share, reversedAfter - platformTotal, 0), sale.creatorAmount, reversedAfter);
  return { creatorRefunded: cents(creatorRefunded), platformRefunded: cents(reversedAfter - creatorRefunded) };
}
