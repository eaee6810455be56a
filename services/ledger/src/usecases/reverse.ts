/**
 * reverse-transaction: a reversing transaction, never an edit. Full, or partial by `partial_amount`; each
 * original posting is taken back by its cumulative share, and a sale's creator and platform sides by theirs (the
 * reversal arithmetic of @treasury/money-rules: reversalAmount, reversalShare, reversalSides), so several partial
 * reversals end exactly where one full reversal would.
 *
 * Sales: the remainder lives in ledger.sales and is changed under that row's lock (FOR UPDATE, before any
 * wallet lock), the same lock refunds take. The creator's part is taken from the sale's hold first; what the
 * creator's available balance cannot cover is booked to the platform-funded creator_receivable, which the
 * posting engine recovers from the creator's next earnings.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { reversalAmount, reversalShare, reversalSides } from "@treasury/money-rules";
import type { z } from "zod";
import { InvariantViolation, type Cover, type ResolvedPosting } from "../domain/posting.ts";
import { KIND_REFUND } from "../domain/refund.ts";
import type { LedgerDeps } from "./deps.ts";
import type { Derived, TxStore } from "./ports.ts";
import type { EntryRow, SaleRow, TransactionRow } from "./rows.ts";

type ReverseBody = z.output<typeof schemas.ReverseTransactionBody>;
export type ReverseDeps = Pick<LedgerDeps, "transactions" | "sales" | "wallets" | "accounts" | "poster">;

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

/** The reversing postings that take `reversedBefore → reversedAfter` (out of `total`) back: each posting's share, the other way round. */
export function reversingPostings(original: readonly ResolvedPosting[], total: number, reversedBefore: number, reversedAfter: number): ResolvedPosting[] {
  const out: ResolvedPosting[] = [];
  for (const p of original) {
    const part = reversalShare(p.amount, total, reversedBefore, reversedAfter);
    if (part > 0) out.push({ debit: p.credit, credit: p.debit, amount: part });
  }
  return out;
}

/** The reversal's answer; `reversal_id` (the official SDK reads it) is the reversing transaction, as `transaction_id`. */
function presentReversal(r: TransactionRow | { transaction_id: string; extra: Record<string, unknown>; amount: number }): Record<string, unknown> {
  if ("transaction_id" in r) return { transaction_id: r.transaction_id, reversal_id: r.transaction_id, amount: r.amount, ...r.extra };
  const extra = (r.result["extra"] ?? {}) as Record<string, unknown>;
  return { transaction_id: r.id, reversal_id: r.id, amount: r.amount, ...extra };
}

/** The reversal's reference: its idempotency_key, else one per original and amount (a repeat is the same reversal). */
function reversalReference(originalId: string, body: ReverseBody): string {
  return body.idempotency_key ?? `${originalId}:${body.partial_amount ?? "full"}`;
}

/** Refuses reversing a reversed transaction; the same reversal sent again (its reference) is a replay. */
async function alreadyReversed(
  store: Pick<TxStore["transactions"], "latestReversal">,
  tenant: Tenant,
  original: TransactionRow,
  body: ReverseBody,
): Promise<DomainError> {
  const last = await store.latestReversal(tenant, original.id);
  const replay = last !== undefined && last.reference_id === reversalReference(original.id, body);
  return new DomainError("duplicate_reversal_reference", `Transaction ${original.id} was already reversed`, {
    extra: {
      existing_transaction_id: last?.id ?? null,
      ...(replay ? { idempotent: true } : {}),
      ...(last !== undefined ? { reversal: presentReversal(last) } : {}),
    },
  });
}

/** What a reversal knows before its transaction: the original, its postings, and a sale's creator accounts. */
interface Original {
  row: TransactionRow;
  postings: ResolvedPosting[];
  /** A sale's creator wallet and receivable (the receivable is created outside the transaction, like every system account). */
  creator: { walletId: string; receivableId: string } | undefined;
  /** The parts a refund took, when the original is one (a reversal gives them back to its sale). */
  refunded: RefundParts | undefined;
}

/**
 * Reverses a transaction, fully or by partial_amount.
 * Errors: transaction_not_found, validation_error (a reversal, or a transaction with no entries),
 * duplicate_reversal_reference (already fully reversed, or this reversal replayed: with the existing reversal),
 * reversal_amount_exceeds_remaining, insufficient_balance (a non-sale reversal a wallet cannot cover),
 * idempotency_conflict.
 */
export async function reverseTransaction(deps: ReverseDeps, tenant: Tenant, body: ReverseBody) {
  const original = await loadOriginal(deps, tenant, body);
  const reference = reversalReference(original.row.id, body);
  const outcome = await deps.poster.post(
    {
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      kind: KIND_REVERSAL,
      reference_id: reference,
      description: body.reason,
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    },
    {
      derive: (tx, ctx) => deriveReversal(tx, tenant, original, body, ctx.transactionId),
      hashInput: { transaction_id: original.row.id, partial_amount: body.partial_amount ?? null },
    },
  );
  const reversal = presentReversal({ transaction_id: outcome.result.transaction_id, amount: outcome.result.amount, extra: outcome.result.extra });
  if (outcome.duplicate) {
    throw new DomainError("duplicate_reversal_reference", `This reversal of ${original.row.id} was already recorded`, {
      extra: { existing_transaction_id: outcome.result.transaction_id, idempotent: true, reversal },
    });
  }
  return reversal;
}

/** The original as read before the transaction, and every refusal that needs no lock. */
async function loadOriginal(deps: ReverseDeps, tenant: Tenant, body: ReverseBody): Promise<Original> {
  const row = await deps.transactions.find(tenant, body.transaction_id);
  if (row === undefined)
    throw new DomainError("transaction_not_found", `Transaction ${body.transaction_id} not found`, { hint: "GET /v1/get-transactions lists transaction ids" });
  if (row.kind === KIND_REVERSAL)
    throw new DomainError("validation_error", "A reversal cannot be reversed", { details: [{ path: "transaction_id", message: "names a reversal" }] });
  if (row.status === "reversed") throw await alreadyReversed(deps.transactions, tenant, row, body);
  const entries = await deps.transactions.entries(tenant, row.id);
  if (entries.length === 0)
    throw new DomainError("validation_error", "The transaction moved no money", {
      details: [{ path: "transaction_id", message: "has no entries to reverse" }],
    });
  const postings = entriesToPostings(entries);
  const participantId = await deps.sales.participantOf(tenant, row.id);
  const creatorWallet = participantId === undefined ? undefined : await deps.wallets.findCreator(tenant, participantId);
  const receivable = participantId === undefined ? undefined : await deps.accounts.ensureSystem(tenant, "creator_receivable", participantId);
  // A refund taken back (the card processor failed it): the sale's remainder gets the refund's parts back.
  const refunded = refundOf(row);
  if (refunded !== undefined && body.partial_amount !== undefined && body.partial_amount !== row.amount) {
    throw new DomainError("validation_error", "A refund is reversed whole", {
      details: [{ path: "partial_amount", message: "a refund cannot be reversed in part" }],
    });
  }
  const creator = creatorWallet !== undefined && receivable !== undefined ? { walletId: creatorWallet.id, receivableId: receivable.id } : undefined;
  return { row, postings, creator, refunded };
}

/**
 * The in-process extension: under the sale's lock (then the original's), how much remains, the sale's sides after
 * it, the refund's parts given back, the original marked, and the reversing postings with their cover.
 */
async function deriveReversal(tx: TxStore, tenant: Tenant, original: Original, body: ReverseBody, reversalId: string): Promise<Derived> {
  const sale = await tx.sales.lockByTransaction(tenant, original.row.id);
  const locked = await tx.transactions.lock(tenant, original.row.id);
  if (locked === undefined) throw new InvariantViolation(`transaction ${original.row.id} vanished`);
  if (locked.status === "reversed" || sale?.reversed === true) throw await alreadyReversed(tx.transactions, tenant, locked, body);
  const total = sale?.gross ?? locked.amount;
  const before = sale?.refunded_amount ?? locked.reversed_amount;
  const amount = reversalAmount(total, before, body.partial_amount);
  if (amount instanceof DomainError) throw amount;
  const after = before + amount;
  if (sale !== undefined) await updateSaleSides(tx, tenant, sale, total, before, after);
  if (original.refunded !== undefined) await restoreRefunded(tx, tenant, original.refunded);
  await tx.transactions.markReversal(tenant, reversalId, original.row.id, locked.reversed_amount + amount, after === total);
  const cover: Cover | undefined =
    sale !== undefined && original.creator !== undefined
      ? { walletId: original.creator.walletId, holdId: sale.hold_id, receivableId: original.creator.receivableId, reason: KIND_REVERSAL }
      : undefined;
  return {
    postings: reversingPostings(original.postings, total, before, after),
    ...(cover === undefined ? {} : { cover }),
    amount,
    extra: {
      reversed_transaction_id: original.row.id,
      status: after === total ? "reversed" : "partially_reversed",
      is_partial: body.partial_amount !== undefined && after !== total,
      remaining_amount: total - after,
      reason: body.reason,
      // The engine's cover replaces these for a sale (posting/engine.ts).
      hold_amount_used: 0,
      creator_receivable_amount: 0,
    },
  };
}

/** The sale's remainder after the reversal, by side (reversalSides); the sale is reversed once nothing remains. */
async function updateSaleSides(tx: TxStore, tenant: Tenant, sale: SaleRow, total: number, before: number, after: number): Promise<void> {
  const sides = reversalSides({ creatorAmount: sale.creator_amount, creatorRefunded: sale.creator_refunded }, total, before, after);
  await tx.sales.updateRemainder(tenant, sale.sale_reference, {
    refunded: after,
    creatorRefunded: sides.creatorRefunded,
    platformRefunded: sides.platformRefunded,
    reversed: after === total,
  });
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
async function restoreRefunded(tx: TxStore, tenant: Tenant, r: RefundParts): Promise<void> {
  const sale = await tx.sales.lockByReference(tenant, r.saleReference);
  if (sale === undefined) throw new InvariantViolation(`sale ${r.saleReference} of a refund vanished`);
  await tx.sales.updateRemainder(tenant, sale.sale_reference, {
    refunded: sale.refunded_amount - r.amount,
    creatorRefunded: sale.creator_refunded - r.fromCreator,
    platformRefunded: sale.platform_refunded - r.fromPlatform,
    reversed: sale.reversed,
  });
}
