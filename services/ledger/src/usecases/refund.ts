/**
 * A refund of a recorded sale (`svc.ledger.post` with `refund`): the ledger computes it. Inside the posting
 * transaction it locks the sale row, checks and decrements the refundable remainder by side (the parts come from
 * refundParts of @treasury/money-rules), and posts the money back to where the sale took it from (platform cash
 * for a card sale, the buyer's wallet for a wallet-funded one): the creator's part from the creator wallet,
 * covered by the sale's hold first, then the available balance, a shortfall booked to creator_receivable or
 * refused (the engine's cover, posting/cover.ts); the platform's part from sales tax payable and platform revenue
 * in proportion.
 * Works for every sale the ledger records (checkout sales and record-sale; shared-wallet spends record no sale
 * and are undone by their own reversal).
 */
import { DomainError, type PostOutcome, type PostRequest, type Tenant } from "@treasury/contracts";
import { KIND_REFUND, type RefundPlan } from "../domain/refund.ts";
import { InvariantViolation, type ResolvedPosting } from "../domain/posting.ts";
import type { LedgerDeps } from "./deps.ts";
import { entriesToPostings } from "./reverse.ts";

export type RefundDeps = Pick<LedgerDeps, "sales" | "wallets" | "accounts" | "transactions" | "poster">;

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
export async function postRefund(deps: RefundDeps, req: PostRequest): Promise<PostOutcome> {
  const spec = req.refund;
  if (spec === undefined) throw new InvariantViolation("postRefund without a refund");
  if (req.kind !== KIND_REFUND || req.postings.length > 0 || req.holds_create.length > 0 || req.holds_release.length > 0 || req.sale !== undefined) {
    throw new DomainError("validation_error", "A refund is kind refund and carries no postings, holds or sale of its own", {
      details: [{ path: "refund", message: "the ledger computes a refund's postings" }],
    });
  }
  const plan = await refundPlan(deps, { orgId: req.org_id, livemode: req.livemode }, spec.sale_reference);
  return deps.poster.post(req, { refund: plan });
}

/** Plans by sale, per sale store: a sale's identity never changes, so its second refund reads nothing before its transaction. */
const plans = new WeakMap<object, Map<string, RefundPlan>>();
const PLANS_MAX = 10_000;

/** What the refund needs to know about its sale, read before the transaction (and remembered per sale store). */
async function refundPlan(deps: RefundDeps, tenant: Tenant, saleReference: string): Promise<RefundPlan> {
  let known = plans.get(deps.sales);
  if (known === undefined) {
    known = new Map();
    plans.set(deps.sales, known);
  }
  const key = `${tenant.orgId}\u0000${tenant.livemode}\u0000${saleReference}`;
  const cached = known.get(key);
  if (cached !== undefined) return cached;
  const sale = await deps.sales.find(tenant, saleReference);
  if (sale === undefined)
    throw new DomainError("original_sale_not_found", `Sale ${saleReference} not found`, {
      hint: "GET /v1/get-transactions lists sales and their reference_id",
    });
  const creatorWallet = sale.participant_id === null ? undefined : await deps.wallets.findCreator(tenant, sale.participant_id);
  const receivable = sale.participant_id === null ? undefined : await deps.accounts.ensureSystem(tenant, "creator_receivable", sale.participant_id);
  const tax = await deps.accounts.ensureSystem(tenant, "sales_tax_payable");
  const revenue = await deps.accounts.ensureSystem(tenant, "platform_revenue");
  const credited = new Set([tax.id, revenue.id, ...(creatorWallet === undefined ? [] : [creatorWallet.id])]);
  const sourceId = saleSource(entriesToPostings(await deps.transactions.entries(tenant, sale.transaction_id)), credited);
  const [source] = await deps.accounts.kinds(tenant, [sourceId]);
  if (source === undefined) throw new InvariantViolation(`the source account ${sourceId} of sale ${saleReference} is missing`);
  const plan: RefundPlan = {
    orgId: tenant.orgId,
    livemode: tenant.livemode,
    saleReference: sale.sale_reference,
    saleTransactionId: sale.transaction_id,
    participantId: sale.participant_id,
    sourceId,
    creatorWalletId: creatorWallet?.id ?? null,
    holdId: sale.hold_id,
    receivableId: receivable?.id ?? null,
    taxId: tax.id,
    revenueId: revenue.id,
    systemNormals: [
      [tax.id, tax.normal],
      [revenue.id, revenue.normal],
      ...(receivable === undefined ? [] : [[receivable.id, receivable.normal] as const]),
      ...(source.is_wallet ? [] : [[source.id, source.normal_side] as const]),
    ],
  };
  if (known.size >= PLANS_MAX) known.clear();
  known.set(key, plan);
  return plan;
}
