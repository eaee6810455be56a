/**
 * Pure posting arithmetic: from resolved accounts and postings to entries with balance_after, the wallets'
 * new states and the system accounts' deltas. No I/O; the posting engine (posting/) feeds it locked rows.
 */
import type { Cents } from "@treasury/contracts";
import { signedDelta, type Side } from "./accounts.ts";

export interface AccountState {
  id: string;
  normal: Side;
  isWallet: boolean;
  /** Wallets: the exact balance. System accounts: unused (their balance lives in shards). */
  balance: number;
  held: number;
}

export interface ResolvedPosting {
  debit: string;
  credit: string;
  amount: Cents;
}

export interface PlannedEntry {
  account_id: string;
  entry_type: Side;
  amount: Cents;
  /** Exact for wallets; null for sharded system accounts. */
  balance_after: number | null;
}

export interface PostingPlan {
  entries: PlannedEntry[];
  /** New state of each wallet the postings touched. */
  wallets: Map<string, AccountState>;
  /** Net change of each system account, in its normal-side terms. */
  systemDeltas: Map<string, number>;
}

/**
 * Who covers what a take-back's postings (a reversal, a refund) take from a creator wallet: the sale's hold first
 * (while it is still held), then the available balance; a shortfall is debited to the platform-funded
 * creator_receivable instead, which the creator repays from later earnings. Wallets never go negative. The posting
 * engine applies it (posting/engine.ts).
 */
export interface Cover {
  walletId: string;
  holdId: string | null;
  receivableId: string;
  /** Why the hold shrinks or ends (on its hold.released event). */
  reason: string;
  /** Refuse (insufficient_balance) instead of booking a shortfall to the receivable. */
  refuseShortfall?: boolean;
}

/** A broken invariant: a bug in the caller, never a client error. */
export class InvariantViolation extends Error {
  constructor(message: string) {
    super(`ledger invariant violated: ${message}`);
    this.name = "InvariantViolation";
  }
}

function safeAdd(a: number, b: number): number {
  const r = a + b;
  if (!Number.isSafeInteger(r)) throw new InvariantViolation(`balance overflow (${a} + ${b})`);
  return r;
}

/**
 * Applies postings in order. `wallets` holds the locked wallet rows (already adjusted for hold changes);
 * every account a posting names must be in `accounts`. The input maps are not modified.
 */
export function planPostings(postings: readonly ResolvedPosting[], accounts: ReadonlyMap<string, AccountState>): PostingPlan {
  const wallets = new Map<string, AccountState>();
  const systemDeltas = new Map<string, number>();
  const entries: PlannedEntry[] = [];
  const apply = (accountId: string, side: Side, amount: Cents): void => {
    const account = accounts.get(accountId);
    if (account === undefined) throw new InvariantViolation(`posting names an unresolved account ${accountId}`);
    const delta = signedDelta(account.normal, side, amount);
    if (account.isWallet) {
      const current = wallets.get(accountId) ?? { ...account };
      current.balance = safeAdd(current.balance, delta);
      wallets.set(accountId, current);
      entries.push({ account_id: accountId, entry_type: side, amount, balance_after: current.balance });
    } else {
      systemDeltas.set(accountId, safeAdd(systemDeltas.get(accountId) ?? 0, delta));
      entries.push({ account_id: accountId, entry_type: side, amount, balance_after: null });
    }
  };
  for (const p of postings) {
    if (!Number.isSafeInteger(p.amount) || p.amount <= 0) throw new InvariantViolation(`posting amount ${p.amount}`);
    if (p.debit === p.credit) throw new InvariantViolation(`posting debits and credits the same account ${p.debit}`);
    apply(p.debit, "debit", p.amount);
    apply(p.credit, "credit", p.amount);
  }
  assertBalanced(entries);
  return { entries, wallets, systemDeltas };
}

/** Debits equal credits: checked on the entries actually written, and a crash when not. */
export function assertBalanced(entries: readonly { entry_type: Side; amount: number }[]): void {
  let debits = 0;
  let credits = 0;
  for (const e of entries) {
    if (e.entry_type === "debit") debits = safeAdd(debits, e.amount);
    else credits = safeAdd(credits, e.amount);
  }
  if (debits !== credits) throw new InvariantViolation(`debits ${debits} != credits ${credits}`);
}

/** A wallet state that may be stored: never negative, holds within the balance. */
export function walletStateOk(w: { balance: number; held: number }): boolean {
  return w.balance >= 0 && w.held >= 0 && w.held <= w.balance;
}

export function available(w: { balance: number; held: number }): number {
  return w.balance - w.held;
}

/**
 * One transaction in the internal `ledger.transaction.posted` event, the same for a single post and a
 * group-committed one: what was posted (its entries). Wallet balances after it are not repeated here: they
 * are in the transaction's stored result and behind the wallet API, and every byte of the event is parsed,
 * stored and rewritten by the outbox relay once per posting.
 */
export function transactionPostedData(
  result: { transaction_id: string; kind: string; reference_id: string; amount: number },
  entries: readonly { account_id: string; entry_type: string; amount: number }[],
): Record<string, unknown> {
  return {
    transaction_id: result.transaction_id,
    kind: result.kind,
    reference_id: result.reference_id,
    amount: result.amount,
    entries: entries.map((e) => ({ account_id: e.account_id, entry_type: e.entry_type, amount: e.amount })),
  };
}

/**
 * Data of the internal `ledger.transaction.posted` event: `{ transactions: [...] }`, one item per committed
 * transaction (transactionPostedData). A group-committed batch writes one event per org and environment
 * listing all of its transactions (ADR 0004); a single post writes one event listing its one transaction.
 */
export function transactionsPostedData(items: readonly Record<string, unknown>[]): Record<string, unknown> {
  return { transactions: items };
}
