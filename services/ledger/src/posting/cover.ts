/**
 * The engine's two rules about a creator's wallet (engine.ts): who covers what a take-back takes from it, and the
 * repayment of what the creator owes from what a request makes available. Pure.
 */
import { cents, type Cents } from "@treasury/contracts";
import { available, InvariantViolation, type AccountState, type Cover, type ResolvedPosting } from "../domain/posting.ts";
import type { HoldState, LedgerView, Recovery, WalletState } from "./engine.ts";

/**
 * Repayments (creator wallet → its creator_receivable) for creator wallets whose available balance this request
 * raises: new earnings, or held earnings released. Earnings credited onto a hold repay when the hold is
 * released ("before they become available"), never from what was available before the request.
 */
export function recoveriesOf(
  wallets: ReadonlyMap<string, WalletState>,
  planned: ReadonlyMap<string, AccountState>,
  accounts: ReadonlyMap<string, AccountState>,
  view: LedgerView,
): (Recovery & { walletId: string })[] {
  const out: (Recovery & { walletId: string })[] = [];
  for (const w of wallets.values()) {
    if (w.accountType !== "creator_earnings" || w.participantId === null) continue;
    const after = planned.get(w.id) ?? accounts.get(w.id);
    if (after === undefined) continue;
    const freed = available(after) - available(w);
    if (freed <= 0) continue;
    const debt = view.receivable(w.participantId);
    if (debt === undefined || debt.outstanding <= 0) continue;
    const amount = Math.min(debt.outstanding, freed, available(after));
    if (amount > 0) out.push({ walletId: w.id, participantId: w.participantId, receivableId: debt.id, amount: cents(amount) });
  }
  return out;
}

/**
 * The creator's part of a sale taken back: the net amount the postings take from the creator wallet comes from
 * the sale's hold first, then the available balance; any shortfall is debited to creator_receivable instead of
 * the wallet (the platform advances it).
 */
export function coverCreatorPart(
  postings: readonly ResolvedPosting[],
  c: Cover,
  view: Pick<LedgerView, "wallet" | "hold">,
): { postings: ResolvedPosting[]; fromHold: Cents; shortfall: Cents; hold: HoldState | undefined } {
  let take = 0;
  for (const p of postings) {
    if (p.debit === c.walletId) take += p.amount;
    if (p.credit === c.walletId) take -= p.amount;
  }
  const none = { postings: [...postings], fromHold: cents(0), shortfall: cents(0), hold: undefined };
  if (take <= 0) return none;
  const wallet = view.wallet(c.walletId);
  if (wallet === undefined) throw new InvariantViolation(`creator wallet ${c.walletId} was not locked`);
  const hold = c.holdId === null ? undefined : view.hold(c.holdId);
  const fromHold = hold !== undefined && hold.status === "held" ? Math.min(take, hold.amount) : 0;
  const availableNow = wallet.balance - (wallet.held - fromHold);
  const shortfall = Math.max(0, take - Math.max(0, availableNow));
  if (shortfall === 0) return { postings: [...postings], fromHold: cents(fromHold), shortfall: cents(0), hold };
  let left = shortfall;
  const out: ResolvedPosting[] = [];
  for (const p of postings) {
    if (left > 0 && p.debit === c.walletId) {
      const moved = Math.min(left, p.amount);
      left -= moved;
      if (p.amount - moved > 0) out.push({ ...p, amount: cents(p.amount - moved) });
      out.push({ debit: c.receivableId, credit: p.credit, amount: cents(moved) });
    } else out.push(p);
  }
  return { postings: out, fromHold: cents(fromHold), shortfall: cents(shortfall), hold };
}
