/**
 * How a payout's money moves, as ledger postings. Pure: everything comes from the payout's stored facts, so
 * every driver of the same intent (the request, a duplicate, the reconciler) sends the ledger the same request.
 *
 * - Request: the creator's wallet gives `amount`. The bank's part (`net`) goes to payouts in transit (live: it
 *   waits for the bank file) or straight out of platform cash (sandbox: simulated, paid at once). Fees paid by
 *   the creator are platform revenue (net = amount − fees); fees paid by the platform are a platform expense
 *   paid from cash (net = amount).
 * - Settlement (live): the bank paid it: payouts in transit → platform cash.
 * - Return (live): the bank sent it back: the creator's wallet gets `amount` back (the bank's part from in
 *   transit, or from cash once settled; creator-paid fees from revenue). A platform-paid fee stays an expense:
 *   the bank charged it whether or not the payout arrived.
 */
import { cents, subCents, type Cents, type Posting, type WalletRef } from "@treasury/contracts";

export type FeesPaidBy = "platform" | "creator";
export type Rail = "sandbox" | "bank_ach";

export interface PayoutAmounts {
  amount: Cents;
  fees: Cents;
  feesPaidBy: FeesPaidBy;
}

/** What the bank receives. Fees must be below the amount (checked at the edge; asserted here). */
export function netAmount(a: PayoutAmounts): Cents {
  if (a.fees < 0 || a.fees >= a.amount) throw new Error(`payout fees ${a.fees} not below amount ${a.amount}`);
  return a.feesPaidBy === "creator" ? subCents(a.amount, a.fees) : a.amount;
}

/** The postings of the payout itself: the wallet gives `amount`. */
export function payoutPostings(wallet: WalletRef, a: PayoutAmounts, rail: Rail): Posting[] {
  const net = netAmount(a);
  const outflow = { system: rail === "sandbox" ? ("platform_cash" as const) : ("payouts_in_transit" as const) };
  const postings: Posting[] = [{ debit: wallet, credit: outflow, amount: net }];
  if (a.fees > 0 && a.feesPaidBy === "creator") postings.push({ debit: wallet, credit: { system: "platform_revenue" }, amount: a.fees });
  if (a.fees > 0 && a.feesPaidBy === "platform") postings.push({ debit: { system: "expense" }, credit: { system: "platform_cash" }, amount: a.fees });
  assertWalletGives(postings, wallet, a.amount);
  return postings;
}

export function settlementPostings(a: PayoutAmounts): Posting[] {
  return [{ debit: { system: "payouts_in_transit" }, credit: { system: "platform_cash" }, amount: netAmount(a) }];
}

export function returnPostings(wallet: WalletRef, a: PayoutAmounts, from: "payouts_in_transit" | "platform_cash"): Posting[] {
  const postings: Posting[] = [{ debit: { system: from }, credit: wallet, amount: netAmount(a) }];
  if (a.fees > 0 && a.feesPaidBy === "creator") postings.push({ debit: { system: "platform_revenue" }, credit: wallet, amount: a.fees });
  return postings;
}

/** The wallet's side of a payout is exactly `amount`: a broken split is a bug, never a request to send. */
function assertWalletGives(postings: readonly Posting[], wallet: WalletRef, amount: Cents): void {
  const key = JSON.stringify(wallet);
  const given = postings.filter((p) => JSON.stringify(p.debit) === key).reduce((sum, p) => sum + p.amount, 0);
  if (cents(given) !== amount) throw new Error(`payout postings take ${given} from the wallet, not ${amount}`);
}
