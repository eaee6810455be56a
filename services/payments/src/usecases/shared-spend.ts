/**
 * Shared-wallet spend and its reversal.
 *
 * spendSharedWallet: charges the buyer's consumer_credit wallet (owner = consumer_sub) and posts the
 * creator/platform/tax split in ONE ledger transaction with the precondition available ≥ amount. The
 * reference_id is the ledger's idempotency key: a replay is refused with duplicate_reference_id and the existing
 * spend. Returns the spend as recorded.
 * Errors: validation_error, participant_not_found, wallet_not_found, insufficient_balance, wallet_not_active,
 * risk_denied, risk_unavailable, duplicate_reference_id, idempotency_conflict, service_timeout.
 *
 * reverseSharedWalletSpend: makes the buyer whole and takes the split back, following "Money across
 * services": the intent (with its reason, in the audit table) is recorded first, then one ledger post with
 * reference = the spend's transaction id, then the outcome. What the creator's available balance cannot cover
 * is booked to the platform-funded creator_receivable account (docs/architecture.md), so a reversal never fails on a
 * creator who has already been paid out. Returns the reversal as first recorded.
 * Errors: transaction_not_found, duplicate_reversal_reference (already reversed; the reversal is returned),
 * insufficient_balance (the creator's balance moved under the plan: retry), service_timeout.
 */
import { DomainError, percentToBps, schemas, type AuthContext, type PostRequestInput, type PostResult, type Tenant } from "@treasury/contracts";
import { creatorBpsFor, DEFAULT_FEE_PAYER, saleInputProblem, splitSale, type SaleSplit } from "@treasury/money-rules";
import { driveEach, postAndSettle, type LedgerPosted } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { z } from "zod";
import type { ReversalRow, SpendRow } from "../domain/records.ts";
import type { PaymentsDeps } from "./deps.ts";
import type { LedgerWallet, ParticipantInfo } from "./ports.ts";

type SpendBody = z.output<typeof schemas.SharedSpendBody>;
type ReverseBody = z.output<typeof schemas.SharedSpendReverseBody>;

export const SPEND_KIND = "shared_spend";
/** A spend's reversal is the ledger's full refund of the spend's sale (kind refund), under this reference. */
export const spendReversalReference = (spendTransactionId: string): string => `shared_spend_reversal:${spendTransactionId}`;
/** The sale a spend records: refunds and the reversal take its money back through the ledger's refund rules. */
export const spendSaleReference = (referenceId: string): string => `shared_spend:${referenceId}`;

/** What a caller is told while the ledger's answer is unknown. */
const PENDING_MESSAGE = "The ledger did not answer in time; retry with the same reference_id to read the outcome";

function balanceOf(result: PostResult, walletId: string): number | null {
  return result.wallets[walletId]?.balance ?? null;
}

/** The spend's creator and the buyer's consumer_credit wallet. */
async function spendParties(deps: PaymentsDeps, tenant: Tenant, body: SpendBody): Promise<{ creator: ParticipantInfo; wallet: LedgerWallet }> {
  const creator = await deps.ledger.participantInfo(tenant, body.creator_id);
  const wallet = await deps.ledger.findWallet(tenant, body.consumer_sub, "consumer_credit");
  if (wallet === undefined) {
    throw new DomainError("wallet_not_found", `No consumer_credit wallet for subject ${body.consumer_sub}`, {
      hint: "POST /v1/wallets with owner_id = the consumer's subject creates it",
    });
  }
  return { creator, wallet };
}

/** One ledger transaction: the buyer's wallet pays the creator's share, the platform's share and the tax, if it has the money. */
function spendRequest(tenant: Tenant, body: SpendBody, split: SaleSplit, walletId: string): PostRequestInput {
  const buyer = { wallet_id: walletId };
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  if (split.creatorAmount > 0) postings.push({ debit: buyer, credit: { participant_id: body.creator_id }, amount: split.creatorAmount });
  if (split.platformAmount > 0) postings.push({ debit: buyer, credit: { system: "platform_revenue" }, amount: split.platformAmount });
  if (split.salesTax > 0) postings.push({ debit: buyer, credit: { system: "sales_tax_payable" }, amount: split.salesTax });
  return {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind: SPEND_KIND,
    reference_id: body.reference_id,
    amount: body.amount,
    description: `Shared wallet spend${body.product_name !== undefined ? `: ${body.product_name}` : ""}`,
    metadata: { consumer_sub: body.consumer_sub, creator_id: body.creator_id, product_id: body.product_id ?? null, ...(body.metadata ?? {}) },
    postings,
    preconditions: [{ wallet: buyer, available_gte: body.amount }],
    sale: {
      sale_reference: spendSaleReference(body.reference_id),
      participant_id: body.creator_id,
      gross: body.amount,
      creator_amount: split.creatorAmount,
      platform_amount: split.platformAmount,
      sales_tax: split.salesTax,
    },
  };
}

function presentSpend(body: SpendBody, split: SaleSplit, result: LedgerPosted, walletId: string, creatorWalletId: string): Record<string, unknown> {
  return {
    consumer_transaction_id: result.transaction_id,
    platform_transaction_id: result.transaction_id,
    reference_id: body.reference_id,
    amount_cents: body.amount,
    creator_id: body.creator_id,
    creator_amount_cents: split.creatorAmount,
    platform_amount_cents: split.platformAmount,
    sales_tax_cents: split.salesTax,
    creator_percent: split.creatorBps / 100,
    wallet_id: walletId,
    wallet_balance_cents: balanceOf(result, walletId),
    creator_balance_cents: balanceOf(result, creatorWalletId),
    created_at: result.created_at,
  };
}

/** Records the spend the ledger posted and answers it; a replay of an earlier spend is duplicate_reference_id. */
async function recordSpend(
  deps: PaymentsDeps,
  tenant: Tenant,
  body: SpendBody,
  split: SaleSplit,
  result: LedgerPosted,
  parties: { creator: ParticipantInfo; wallet: LedgerWallet },
): Promise<Record<string, unknown>> {
  await deps.spends.record(tenant, {
    reference_id: body.reference_id,
    transaction_id: result.transaction_id,
    consumer_sub: body.consumer_sub,
    consumer_wallet_id: parties.wallet.id,
    creator_id: body.creator_id,
    amount: body.amount,
    sales_tax: split.salesTax,
    creator_amount: split.creatorAmount,
    platform_amount: split.platformAmount,
    creator_bps: split.creatorBps,
    product_id: body.product_id ?? null,
    product_name: body.product_name ?? null,
    metadata: body.metadata ?? {},
  });
  const spend = presentSpend(body, split, result, parties.wallet.id, parties.creator.wallet_id);
  if (result.duplicate) {
    throw new DomainError("duplicate_reference_id", `A shared spend with reference_id ${body.reference_id} exists`, {
      extra: { existing_transaction_id: result.transaction_id, spend },
    });
  }
  return spend;
}

export async function spendSharedWallet(deps: PaymentsDeps, tenant: Tenant, body: SpendBody): Promise<Record<string, unknown>> {
  const problem = saleInputProblem(body.amount, body.sales_tax ?? 0);
  if (problem !== undefined) throw new DomainError("validation_error", `Invalid body: ${problem.path}: ${problem.message}`, { details: [problem] });
  const parties = await spendParties(deps, tenant, body);
  const participantBps = parties.creator.default_split_percent === null ? null : percentToBps(parties.creator.default_split_percent);
  // A spend from a wallet has no processor fee.
  const split = splitSale({
    gross: body.amount,
    salesTax: body.sales_tax ?? 0,
    processingFee: 0,
    feePaidBy: DEFAULT_FEE_PAYER,
    creatorBps: creatorBpsFor(body.creator_percent, participantBps),
  });
  // reference_id is the spend's idempotency key: a retry is the same evaluation.
  await deps.risk.check(tenant, {
    operation: "checkout",
    key: `shared_spend:${body.reference_id}`,
    amount: body.amount,
    participant_id: body.creator_id,
    buyer_id: body.consumer_sub,
  });
  return postAndSettle({
    post: () => deps.ledger.post(spendRequest(tenant, body, split, parties.wallet.id)),
    settle: (result) => recordSpend(deps, tenant, body, split, result, parties),
    // Nothing was recorded before the post: a refusal is the caller's answer as it is.
    refused: (e) => Promise.reject(e),
    pendingMessage: PENDING_MESSAGE,
  });
}

/**
 * The reversal as a ledger request: a full refund of the spend's sale back to the buyer's wallet. The ledger owns
 * the rule (refundParts in @treasury/money-rules and the engine's cover): the creator's part comes from what is available, and what
 * the creator no longer has is booked to the platform-funded creator_receivable, so the buyer is always made whole.
 */
function reversalRequest(tenant: Tenant, spend: SpendRow, rev: ReversalRow): PostRequestInput {
  return {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind: "refund",
    reference_id: spendReversalReference(spend.transaction_id),
    description: `Reversal of shared wallet spend ${spend.reference_id}`,
    metadata: { sale_transaction_id: spend.transaction_id, spend_reference_id: spend.reference_id, reason: rev.reason },
    refund: { sale_reference: spendSaleReference(spend.reference_id), refund_from: "both", ...(rev.reason === null ? {} : { reason: rev.reason }) },
  };
}

/** Records the reversal the ledger posted (reversing → reversed) and answers it as first recorded. */
async function settleReversal(deps: PaymentsDeps, tenant: Tenant, spend: SpendRow, rev: ReversalRow, result: LedgerPosted): Promise<Record<string, unknown>> {
  const creatorWallet = (await deps.ledger.participantInfo(tenant, spend.creator_id)).wallet_id;
  const refund = (result.extra["refund"] ?? {}) as { from_creator?: number };
  const receivable = Number(result.extra["creator_receivable_amount"] ?? 0);
  const reversal = {
    consumer_reversal_transaction_id: result.transaction_id,
    platform_reversal_transaction_id: result.transaction_id,
    sale_transaction_id: spend.transaction_id,
    reference_id: spend.reference_id,
    status: "reversed",
    // What the reversal gave back: all of the spend, less any part refunded before.
    amount_cents: result.amount,
    creator_reversed_cents: Number(refund.from_creator ?? 0) - receivable,
    creator_receivable_cents: receivable,
    reason: rev.reason,
    wallet_balance_cents: balanceOf(result, spend.consumer_wallet_id),
    creator_balance_cents: balanceOf(result, creatorWallet),
  };
  await deps.spends.settleReversal(tenant, spend.transaction_id, result.transaction_id, reversal);
  const stored = await deps.spends.findReversal(tenant, spend.transaction_id);
  return stored?.response ?? reversal;
}

async function driveReversal(deps: PaymentsDeps, tenant: Tenant, spend: SpendRow, rev: ReversalRow): Promise<Record<string, unknown>> {
  return postAndSettle({
    post: () => deps.ledger.post(reversalRequest(tenant, spend, rev)),
    settle: (result) => settleReversal(deps, tenant, spend, rev, result),
    // The intent stays `reversing`: the caller gets the refusal, and the reconciler asks again.
    refused: (e) => Promise.reject(e),
    pendingMessage: PENDING_MESSAGE,
  });
}

function alreadyReversed(spend: SpendRow, rev: ReversalRow): DomainError {
  return new DomainError("duplicate_reversal_reference", `Shared spend ${spend.transaction_id} was already reversed`, {
    extra: { existing_transaction_id: rev.reversal_transaction_id, reversal: rev.response },
  });
}

export async function reverseSharedWalletSpend(deps: PaymentsDeps, tenant: Tenant, auth: AuthContext, body: ReverseBody): Promise<Record<string, unknown>> {
  const spend = await deps.spends.findByTransaction(tenant, body.sale_transaction_id);
  if (spend === undefined) {
    throw new DomainError("transaction_not_found", `No shared spend with transaction ${body.sale_transaction_id}`, {
      hint: "sale_transaction_id is the spend's platform_transaction_id",
    });
  }
  const existing = await deps.spends.findReversal(tenant, spend.transaction_id);
  if (existing?.status === "reversed") throw alreadyReversed(spend, existing);
  let rev = existing;
  if (rev === undefined) {
    rev = await deps.spends.recordReversalIntent(tenant, {
      saleTransactionId: spend.transaction_id,
      spendReferenceId: spend.reference_id,
      reason: body.reason ?? null,
      metadata: body.metadata ?? {},
      requestId: auth.request_id,
      keyId: auth.key_id,
    });
    if (rev.status === "reversed") throw alreadyReversed(spend, rev);
  }
  return driveReversal(deps, tenant, spend, rev);
}

/** Reconciler hook: reversals recorded but not settled (a crash or a ledger timeout in between). */
export async function driveStuckReversals(deps: PaymentsDeps, graceMs: number, limit: number, log: Logger): Promise<number> {
  const rows = (await deps.spends.stuckReversals(graceMs, limit)).map((rev) => ({ ...rev, id: rev.sale_transaction_id }));
  return driveEach(log, { noun: "shared-spend reversal", idField: "sale_transaction_id" }, rows, async (rev) => {
    const tenant = { orgId: rev.org_id, livemode: rev.livemode };
    const spend = await deps.spends.findByTransaction(tenant, rev.sale_transaction_id);
    if (spend === undefined) return { status: "no shared spend recorded for it" };
    await driveReversal(deps, tenant, spend, rev);
    return { status: "reversed" };
  });
}
