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
import { cents, DomainError, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import { InvariantViolation, type ResolvedPosting } from "../domain/posting.ts";
import { KIND_REFUND } from "../domain/refund.ts";
import { ensureSystemAccount, findCreatorWallet, type Scope } from "../store/accounts.ts";
import type { Q, Sql } from "../store/db.ts";
import { lockSaleByReference, lockSaleByTransaction, updateSaleRemainder } from "../store/sales.ts";
import { findTransaction, latestReversal, markReversal, transactionEntries, type EntryRow, type TransactionRow } from "../store/transactions.ts";
import type { Derived, PostPort } from "./post-request.ts";

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
    if (part > 0) out.push({ debit: p.credit, credit: p.debit, amount: cents(part) });
  }
  return out;
}

function presentReversal(r: TransactionRow | { transaction_id: string; extra: Record<string, unknown>; amount: number }): Record<string, unknown> {
  if ("transaction_id" in r) return { transaction_id: r.transaction_id, amount: r.amount, ...r.extra };
  const extra = (r.result["extra"] ?? {}) as Record<string, unknown>;
  return { transaction_id: r.id, amount: r.amount, ...extra };
}

async function alreadyReversed(sql: Q, scope: Scope, original: TransactionRow): Promise<DomainError> {
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
export async function reverseTransaction(sql: Sql, scope: Scope, body: ReverseBody, poster: PostPort) {
  const original = await findTransaction(sql, scope, body.transaction_id);
  if (original === undefined)
    throw new DomainError("transaction_not_found", `Transaction ${body.transaction_id} not found`, { hint: "GET /v1/get-transactions lists transaction ids" });
  if (original.kind === KIND_REVERSAL)
    throw new DomainError("validation_error", "A reversal cannot be reversed", { details: [{ path: "transaction_id", message: "names a reversal" }] });
  if (original.status === "reversed") throw await alreadyReversed(sql, scope, original);
  const entries = await transactionEntries(sql, scope, original.id);
  if (entries.length === 0)
    throw new DomainError("validation_error", "The transaction moved no money", {
      details: [{ path: "transaction_id", message: "has no entries to reverse" }],
    });
  const postings = entriesToPostings(entries);

  // Sales: the creator's wallet and receivable are known before the transaction (the receivable is created
  // outside it, like every system account).
  const participantId = await saleParticipant(sql, scope, original.id);
  const creatorWallet = participantId === undefined ? undefined : await findCreatorWallet(sql, scope, participantId);
  const receivable = participantId === undefined ? undefined : await ensureSystemAccount(sql, scope, "creator_receivable", participantId);

  // A refund taken back (the card processor failed it): the sale's remainder gets the refund's parts back.
  const refunded = refundOf(original);
  if (refunded !== undefined && body.partial_amount !== undefined && body.partial_amount !== original.amount) {
    throw new DomainError("validation_error", "A refund is reversed whole", {
      details: [{ path: "partial_amount", message: "a refund cannot be reversed in part" }],
    });
  }
  const reference = body.idempotency_key ?? `${original.id}:${body.partial_amount ?? "full"}`;
  const derive = async (tx: Q, ctx: { transactionId: string }): Promise<Derived> => {
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
    if (sale !== undefined) {
      // The creator's part is the creator posting's cumulative share; the sides always sum to what is refunded.
      const share = (done: number): number => Number((BigInt(sale.creator_amount) * BigInt(done)) / BigInt(total));
      const platformTotal = total - sale.creator_amount;
      const creatorRefunded = Math.min(Math.max(sale.creator_refunded + share(after) - share(before), after - platformTotal, 0), sale.creator_amount, after);
      await updateSaleRemainder(tx, scope, sale.sale_reference, {
        refunded: after,
        creatorRefunded,
        platformRefunded: after - creatorRefunded,
        reversed: after === total,
      });
    }
    if (refunded !== undefined) await restoreRefunded(tx, scope, refunded);
    await markReversal(tx, scope, ctx.transactionId, original.id, locked.reversed_amount + amount, after === total);
    const cover =
      sale !== undefined && creatorWallet !== undefined && receivable !== undefined
        ? { walletId: creatorWallet.id, holdId: sale.hold_id, receivableId: receivable.id, reason: KIND_REVERSAL }
        : undefined;
    return {
      postings: reversingPostings(postings, total, before, after),
      ...(cover === undefined ? {} : { cover }),
      amount,
      extra: {
        reversed_transaction_id: original.id,
        status: after === total ? "reversed" : "partially_reversed",
        is_partial: body.partial_amount !== undefined && after !== total,
        remaining_amount: total - after,
        reason: body.reason,
        // The engine's cover replaces these for a sale (domain/engine.ts).
        hold_amount_used: 0,
        creator_receivable_amount: 0,
      },
    };
  };
  const outcome = await poster.post(
    {
      org_id: scope.orgId,
      livemode: scope.livemode,
      kind: KIND_REVERSAL,
      reference_id: reference,
      description: body.reason,
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    },
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

interface RefundParts {
  saleReference: string;
  amount: number;
  fromCreator: number;
  fromPlatform: number;
}

/** The parts of a refund transaction (the ledger's refund kind records them in its result), else undefined. */
function refundOf(t: TransactionRow): RefundParts | undefined {
  if (t.kind !== KIND_REFUND) return undefined;
  const r = (t.result["extra"] as { refund?: Record<string, unknown> } | undefined)?.refund;
  if (r === undefined) return undefined;
  return {
    saleReference: String(r["sale_reference"]),
    amount: Number(r["amount"]),
    fromCreator: Number(r["from_creator"]),
    fromPlatform: Number(r["from_platform"]),
  };
}

/** Gives a reversed refund's parts back to its sale's remainder, under the sale's lock (taken before any wallet's). */
async function restoreRefunded(tx: Q, scope: Scope, r: RefundParts): Promise<void> {
  const sale = await lockSaleByReference(tx, scope, r.saleReference);
  if (sale === undefined) throw new InvariantViolation(`sale ${r.saleReference} of a refund vanished`);
  await updateSaleRemainder(tx, scope, sale.sale_reference, {
    refunded: sale.refunded_amount - r.amount,
    creatorRefunded: sale.creator_refunded - r.fromCreator,
    platformRefunded: sale.platform_refunded - r.fromPlatform,
    reversed: sale.reversed,
  });
}
