/**
 * A refund of a recorded sale (`svc.ledger.post` with `refund`): the ledger owns the arithmetic. Inside the
 * posting transaction it locks the sale row, checks and decrements the refundable remainder by side
 * (domain/refund.ts), and posts the money back to where the sale took it from (platform cash for a card sale,
 * the buyer's wallet for a wallet-funded one): the creator's part from the creator wallet, covered by the sale's
 * hold first, then the available balance, a shortfall booked to creator_receivable or refused
 * (domain/engine.ts cover); the platform's part from sales tax payable and platform revenue in proportion.
 * Works for every sale the ledger records (checkout sales, shared-wallet spends, record-sale).
 */
import { cents, DomainError, type PostOutcome, type PostRequest } from "@treasury/contracts";
import { refundParts, type RefundParts, type SaleState } from "../domain/refund.ts";
import { InvariantViolation, type ResolvedPosting } from "../domain/posting.ts";
import { ensureSystemAccount, findCreatorWallet, type Scope } from "../store/accounts.ts";
import type { Q, Sql } from "../store/db.ts";
import { findSale, lockSaleByReference, updateSaleRemainder, type SaleRow } from "../store/sales.ts";
import { transactionEntries } from "../store/transactions.ts";
import type { Derived, PostPort } from "./post-request.ts";
import { entriesToPostings } from "./reverse.ts";

export const KIND_REFUND = "refund";

function state(s: SaleRow): SaleState {
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

/** Where the sale's money came from: the account its inflow postings debit (never the processing-fee posting). */
function saleSource(postings: readonly ResolvedPosting[], credited: ReadonlySet<string>): string {
  const inflow = postings.find((p) => credited.has(p.credit));
  if (inflow === undefined) throw new InvariantViolation("a sale without an inflow posting");
  return inflow.debit;
}

/**
 * Posts a refund request. Errors: validation_error, original_sale_not_found, sale_already_reversed,
 * sale_already_fully_refunded, refund_amount_exceeds_remaining (with remaining_amount), insufficient_balance
 * (shortfall: refuse), wallet_not_active, idempotency_conflict.
 */
export async function postRefund(sql: Sql, poster: PostPort, req: PostRequest): Promise<PostOutcome> {
  const spec = req.refund;
  if (spec === undefined) throw new InvariantViolation("postRefund without a refund");
  if (req.kind !== KIND_REFUND || req.postings.length > 0 || req.holds_create.length > 0 || req.holds_release.length > 0 || req.sale !== undefined) {
    throw new DomainError("validation_error", "A refund is kind refund and carries no postings, holds or sale of its own", { details: [{ path: "refund", message: "the ledger computes a refund's postings" }] });
  }
  const scope: Scope = { orgId: req.org_id, livemode: req.livemode };
  // The sale's identity never changes: its postings, creator and hold are read before the transaction.
  const sale = await findSale(sql, scope, spec.sale_reference);
  if (sale === undefined) throw new DomainError("original_sale_not_found", `Sale ${spec.sale_reference} not found`, { hint: "GET /v1/get-transactions lists sales and their reference_id" });
  const creatorWallet = sale.participant_id === null ? undefined : await findCreatorWallet(sql, scope, sale.participant_id);
  const receivable = sale.participant_id === null ? undefined : await ensureSystemAccount(sql, scope, "creator_receivable", sale.participant_id);
  const tax = await ensureSystemAccount(sql, scope, "sales_tax_payable");
  const revenue = await ensureSystemAccount(sql, scope, "platform_revenue");
  const credited = new Set([tax.id, revenue.id, ...(creatorWallet === undefined ? [] : [creatorWallet.id])]);
  const source = saleSource(entriesToPostings(await transactionEntries(sql, scope, sale.transaction_id)), credited);

  const derive = async (tx: Q): Promise<Derived> => {
    const locked = await lockSaleByReference(tx, scope, spec.sale_reference);
    if (locked === undefined) throw new InvariantViolation(`sale ${spec.sale_reference} vanished`);
    const parts = refundParts(state(locked), spec.amount, spec.refund_from);
    if (parts instanceof DomainError) throw parts;
    await updateSaleRemainder(tx, scope, locked.sale_reference, {
      refunded: locked.refunded_amount + parts.amount,
      creatorRefunded: locked.creator_refunded + parts.fromCreator,
      platformRefunded: locked.platform_refunded + parts.fromPlatform,
      reversed: false,
    });
    const postings: ResolvedPosting[] = [];
    if (parts.fromCreator > 0) {
      if (creatorWallet === undefined) throw new InvariantViolation(`sale ${locked.sale_reference} has a creator part but no creator wallet`);
      postings.push({ debit: creatorWallet.id, credit: source, amount: parts.fromCreator });
    }
    if (parts.tax > 0) postings.push({ debit: tax.id, credit: source, amount: parts.tax });
    if (parts.revenue > 0) postings.push({ debit: revenue.id, credit: source, amount: parts.revenue });
    const cover =
      parts.fromCreator > 0 && creatorWallet !== undefined && receivable !== undefined
        ? { walletId: creatorWallet.id, holdId: locked.hold_id, receivableId: receivable.id, reason: KIND_REFUND, refuseShortfall: spec.shortfall === "refuse" }
        : undefined;
    return { postings, ...(cover === undefined ? {} : { cover }), amount: parts.amount, extra: { refund: refundExtra(locked, parts, spec.refund_from) } };
  };
  return poster.post(req, { derive, hashInput: req });
}

function refundExtra(sale: SaleRow, parts: RefundParts, refundFrom: string): Record<string, unknown> {
  return {
    sale_reference: sale.sale_reference,
    sale_transaction_id: sale.transaction_id,
    participant_id: sale.participant_id,
    amount: parts.amount,
    from_creator: parts.fromCreator,
    from_platform: parts.fromPlatform,
    sales_tax: parts.tax,
    refund_from: refundFrom,
    remaining_amount: parts.remaining,
    is_full_refund: parts.full,
    sale_gross: cents(sale.gross),
  };
}
