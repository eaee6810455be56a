/**
 * reverse-transaction: a reversing transaction, never an edit. Full, or partial by `partial_amount`; each
 * original posting is taken back by its cumulative share (floor(p × reversed_after / total) − floor(p ×
 * reversed_before / total)), so several partial reversals end exactly where one full reversal would.
 *
 * Sales: the remainder lives in ledger.sales and is changed under that row's lock (FOR UPDATE, before any
 * wallet lock), the same lock refunds take. The creator's part is taken from the sale's hold first; what the
 * creator's available balance cannot cover is booked to the platform-funded creator_receivable, which the
 * posting engine recovers from the creator's next earnings.
 */
import { DomainError, newId, type schemas } from "@treasury/contracts";
import { writeOutbox } from "@treasury/service-kit";
import type { z } from "zod";
import { InvariantViolation, type ResolvedPosting } from "../domain/posting.ts";
import { ensureSystemAccount, findCreatorWallet, lockWallets, type Scope } from "../store/accounts.ts";
import type { Sql, Tx } from "../store/db.ts";
import { lockHolds, markReleased, reduceHold } from "../store/holds.ts";
import { lockSaleByTransaction, updateSaleRemainder } from "../store/sales.ts";
import { findTransaction, latestReversal, markReversal, transactionEntries, type EntryRow, type TransactionRow } from "../store/transactions.ts";
import { post, type Derived, type PostDeps } from "./post.ts";

type ReverseBody = z.output<typeof schemas.ReverseTransactionBody>;

export const KIND_REVERSAL = "reversal";

/** Pairs a transaction's entries back into its postings (the engine writes each posting's debit, then credit). */
export function entriesToPostings(entries: readonly EntryRow[]): ResolvedPosting[] {
  if (entries.length % 2 !== 0) throw new InvariantViolation("a transaction has an odd number of entries");
  const out: ResolvedPosting[] = [];
  for (let i = 0; i < entries.length; i += 2) {
    const d = entries[i];
    const c = entries[i + 1];
    if (d === undefined || c === undefined || d.entry_type !== "debit" || c.entry_type !== "credit" || d.amount !== c.amount) {
      throw new InvariantViolation(`entries ${d?.id}/${c?.id} are not a posting`);
    }
    out.push({ debit: d.account_id, credit: c.account_id, amount: d.amount });
  }
  return out;
}

/** The reversing postings that take `reversedBefore → reversedAfter` (out of `total`) back. */
export function reversingPostings(original: readonly ResolvedPosting[], total: number, reversedBefore: number, reversedAfter: number): ResolvedPosting[] {
  const cum = (p: number, r: number) => Number((BigInt(p) * BigInt(r)) / BigInt(total));
  const out: ResolvedPosting[] = [];
  for (const p of original) {
    const part = cum(p.amount, reversedAfter) - cum(p.amount, reversedBefore);
    if (part > 0) out.push({ debit: p.credit, credit: p.debit, amount: part });
  }
  return out;
}

function presentReversal(r: TransactionRow | { transaction_id: string; extra: Record<string, unknown>; amount: number }): Record<string, unknown> {
  if ("transaction_id" in r) return { transaction_id: r.transaction_id, amount: r.amount, ...r.extra };
  const extra = (r.result["extra"] ?? {}) as Record<string, unknown>;
  return { transaction_id: r.id, amount: r.amount, ...extra };
}

async function alreadyReversed(sql: Tx | Sql, scope: Scope, original: TransactionRow): Promise<DomainError> {
  const last = await latestReversal(sql, scope, original.id);
  return new DomainError("duplicate_reversal_reference", `Transaction ${original.id} was already reversed`, {
    extra: { existing_transaction_id: last?.id ?? null, ...(last !== undefined ? { reversal: presentReversal(last) } : {}) },
  });
}

/**
 * Reverses a transaction, fully or by partial_amount.
 * Errors: transaction_not_found, validation_error (a reversal, or a transaction with no entries),
 * duplicate_reversal_reference (already fully reversed, or this reversal replayed: with the existing reversal),
 * reversal_amount_exceeds_remaining, insufficient_balance (a non-sale reversal a wallet cannot cover),
 * idempotency_conflict.
 */
export async function reverseTransaction(sql: Sql, scope: Scope, body: ReverseBody, deps: PostDeps = {}) {
  const original = await findTransaction(sql, scope, body.transaction_id);
  if (original === undefined) throw new DomainError("transaction_not_found", `Transaction ${body.transaction_id} not found`, { hint: "GET /v1/get-transactions lists transaction ids" });
  if (original.kind === KIND_REVERSAL) throw new DomainError("validation_error", "A reversal cannot be reversed", { details: [{ path: "transaction_id", message: "names a reversal" }] });
  if (original.status === "reversed") throw await alreadyReversed(sql, scope, original);
  const entries = await transactionEntries(sql, scope, original.id);
  if (entries.length === 0) throw new DomainError("validation_error", "The transaction moved no money", { details: [{ path: "transaction_id", message: "has no entries to reverse" }] });
  const postings = entriesToPostings(entries);

  // Sales: the creator's wallet and receivable are known before the transaction (the receivable is created
  // outside it, like every system account).
  const participantId = await saleParticipant(sql, scope, original.id);
  const creatorWallet = participantId === undefined ? undefined : await findCreatorWallet(sql, scope, participantId);
  const receivable = participantId === undefined ? undefined : await ensureSystemAccount(sql, scope, "creator_receivable", participantId);

  const reference = body.idempotency_key ?? `${original.id}:${body.partial_amount ?? "full"}`;
  const derive = async (tx: Tx, ctx: { transactionId: string }): Promise<Derived> => {
    const sale = await lockSaleByTransaction(tx, scope, original.id);
    const locked = await findTransaction(tx, scope, original.id, { forUpdate: true });
    if (locked === undefined) throw new InvariantViolation(`transaction ${original.id} vanished`);
    if (locked.status === "reversed" || sale?.reversed === true) throw await alreadyReversed(tx, scope, locked);
    const total = sale?.gross ?? locked.amount;
    const before = sale?.refunded_amount ?? locked.reversed_amount;
    const remaining = total - before;
    if (total <= 0 || remaining <= 0) {
      throw new DomainError("reversal_amount_exceeds_remaining", "Nothing of this transaction remains to reverse", { extra: { remaining_amount: 0 } });
    }
    const amount = body.partial_amount ?? remaining;
    if (amount > remaining) {
      throw new DomainError("reversal_amount_exceeds_remaining", `partial_amount ${amount} exceeds the unreversed ${remaining}`, {
        extra: { remaining_amount: remaining },
        hint: `POST /v1/reverse-transaction with partial_amount at most ${remaining}, or without it to reverse the rest`,
      });
    }
    const after = before + amount;
    let out = reversingPostings(postings, total, before, after);
    const heldDeltas = new Map<string, number>();
    let fromHold = 0;
    let shortfall = 0;
    if (sale !== undefined && creatorWallet !== undefined && receivable !== undefined) {
      ({ out, fromHold, shortfall } = await coverCreatorPart(tx, scope, out, { walletId: creatorWallet.id, holdId: sale.hold_id, receivableId: receivable.id, transactionId: ctx.transactionId }));
      if (fromHold > 0) heldDeltas.set(creatorWallet.id, -fromHold);
      await updateSaleRemainder(tx, scope, sale.sale_reference, after, after === total);
    }
    await markReversal(tx, scope, ctx.transactionId, original.id, locked.reversed_amount + amount, after === total);
    return {
      postings: out,
      heldDeltas,
      amount,
      extra: {
        reversed_transaction_id: original.id,
        status: after === total ? "reversed" : "partially_reversed",
        is_partial: body.partial_amount !== undefined && after !== total,
        remaining_amount: total - after,
        reason: body.reason,
        hold_amount_used: fromHold,
        creator_receivable_amount: shortfall,
      },
    };
  };
  const outcome = await post(
    sql,
    { org_id: scope.orgId, livemode: scope.livemode, kind: KIND_REVERSAL, reference_id: reference, description: body.reason, ...(body.metadata !== undefined ? { metadata: body.metadata } : {}) },
    deps,
    { derive, hashInput: { transaction_id: original.id, partial_amount: body.partial_amount ?? null } },
  );
  const reversal = presentReversal({ transaction_id: outcome.result.transaction_id, amount: outcome.result.amount, extra: outcome.result.extra });
  if (outcome.duplicate) {
    throw new DomainError("duplicate_reversal_reference", `This reversal of ${original.id} was already recorded`, {
      extra: { existing_transaction_id: outcome.result.transaction_id, reversal },
    });
  }
  return reversal;
}

async function saleParticipant(sql: Sql, scope: Scope, transactionId: string): Promise<string | undefined> {
  const [row] = await sql<{ participant_id: string | null }[]>`
    select participant_id from ledger.sales where transaction_id = ${transactionId} and org_id = ${scope.orgId} and livemode = ${scope.livemode}`;
  return row?.participant_id ?? undefined;
}

/**
 * The creator's part of a sale reversal: from the sale's hold first, then the available balance; any
 * shortfall is debited to creator_receivable instead of the wallet (the platform advances it).
 */
async function coverCreatorPart(
  tx: Tx,
  scope: Scope,
  postings: ResolvedPosting[],
  c: { walletId: string; holdId: string | null; receivableId: string; transactionId: string },
): Promise<{ out: ResolvedPosting[]; fromHold: number; shortfall: number }> {
  let take = 0;
  for (const p of postings) {
    if (p.debit === c.walletId) take += p.amount;
    if (p.credit === c.walletId) take -= p.amount;
  }
  if (take <= 0) return { out: postings, fromHold: 0, shortfall: 0 };
  const [wallet] = await lockWallets(tx, scope, [c.walletId]);
  if (wallet === undefined) throw new InvariantViolation(`creator wallet ${c.walletId} missing`);
  let fromHold = 0;
  if (c.holdId !== null) {
    const [hold] = await lockHolds(tx, scope, [c.holdId]);
    if (hold !== undefined && hold.status === "held") {
      fromHold = Math.min(take, hold.amount);
      if (fromHold === hold.amount) {
        const released = await markReleased(tx, scope, hold.id, { releaseId: newId("rel"), transactionId: c.transactionId, transferExecuted: false });
        // The same event a release answers, so hold subscribers see the hold end however it ended.
        await writeOutbox(tx, "ledger", {
          org_id: scope.orgId,
          livemode: scope.livemode,
          type: "hold.released",
          data: {
            hold_id: released.id,
            release_id: released.release_id,
            participant_id: released.participant_id,
            wallet_id: released.wallet_id,
            amount: released.amount,
            currency: "USD",
            transfer_executed: false,
            transaction_id: released.release_transaction_id,
            reason: "reversal",
          },
        });
      } else await reduceHold(tx, scope, hold.id, fromHold);
    }
  }
  const availableNow = wallet.balance - (wallet.held_amount - fromHold);
  const shortfall = Math.max(0, take - Math.max(0, availableNow));
  if (shortfall === 0) return { out: postings, fromHold, shortfall };
  let left = shortfall;
  const out: ResolvedPosting[] = [];
  for (const p of postings) {
    if (left > 0 && p.debit === c.walletId) {
      const moved = Math.min(left, p.amount);
      left -= moved;
      if (p.amount - moved > 0) out.push({ ...p, amount: p.amount - moved });
      out.push({ debit: c.receivableId, credit: p.credit, amount: moved });
    } else out.push(p);
  }
  return { out, fromHold, shortfall };
}
