/**
 * Shared-wallet spend and its reversal.
 *
 * spendSharedWallet: charges the buyer's consumer_credit wallet (owner = consumer_sub) and posts the
 * creator/platform/tax split in ONE ledger transaction with the precondition available ≥ amount. The
 * reference_id is the ledger's idempotency key: a replay is 409 duplicate_reference_id with the existing spend.
 * Errors: validation_error, participant_not_found, wallet_not_found, insufficient_balance, wallet_not_active,
 * duplicate_reference_id, idempotency_conflict, service_timeout.
 *
 * reverseSharedWalletSpend: makes the buyer whole and takes the split back, following "Money across
 * services": the intent (with its reason, in the audit table) is recorded first, then one ledger post with
 * reference = the spend's transaction id, then the outcome. What the creator's available balance cannot cover
 * is booked to the platform-funded creator_receivable account (docs/architecture.md), so a reversal never fails on a
 * creator who has already been paid out.
 * Errors: transaction_not_found, duplicate_reversal_reference (already reversed; the reversal is returned),
 * insufficient_balance (the creator's balance moved under the plan: retry), service_timeout.
 */
import { DomainError, percentToBps, schemas, type AuthContext, type PostRequestInput, type PostResult } from "@treasury/contracts";
import { creatorBpsFor, DEFAULT_FEE_PAYER, saleInputProblem, splitSale } from "@treasury/money-rules";
import { driveEach, withTx } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { z } from "zod";
import { LedgerOutcomeUnknown, type Scope } from "../adapters/ledger.ts";
import {
  findReversal,
  findSpendByTransaction,
  insertReversal,
  markReversed,
  setSpendStatus,
  stuckReversals,
  upsertSpend,
  type ReversalRow,
  type SpendRow,
} from "../store/spends.ts";
import type { PaymentsDeps } from "./deps.ts";

type SpendBody = z.output<typeof schemas.SharedSpendBody>;
type ReverseBody = z.output<typeof schemas.SharedSpendReverseBody>;

export const SPEND_KIND = "shared_spend";
/** A spend's reversal is the ledger's full refund of the spend's sale (kind refund), under this reference. */
export const spendReversalReference = (spendTransactionId: string): string => `shared_spend_reversal:${spendTransactionId}`;
/** The sale a spend records: refunds and the reversal take its money back through the ledger's refund rules. */
export const spendSaleReference = (referenceId: string): string => `shared_spend:${referenceId}`;

function outcomeUnknown(): DomainError {
  return new DomainError("service_timeout", "The ledger did not answer in time; retry with the same reference_id to read the outcome");
}

function balanceOf(result: PostResult, walletId: string): number | null {
  return result.wallets[walletId]?.balance ?? null;
}

export async function spendSharedWallet(deps: PaymentsDeps, scope: Scope, body: SpendBody): Promise<{ status: number; body: Record<string, unknown> }> {
  const problem = saleInputProblem(body.amount, body.sales_tax ?? 0);
  if (problem !== undefined) throw new DomainError("validation_error", `Invalid body: ${problem.path}: ${problem.message}`, { details: [problem] });
  const creator = await deps.ledger.participantInfo(scope, body.creator_id);
  const wallet = await deps.ledger.findWallet(scope, body.consumer_sub, "consumer_credit");
  if (wallet === undefined) {
    throw new DomainError("wallet_not_found", `No consumer_credit wallet for subject ${body.consumer_sub}`, {
      hint: "POST /v1/wallets with owner_id = the consumer's subject creates it",
    });
  }
  const participantBps = creator.default_split_percent === null ? null : percentToBps(creator.default_split_percent);
  // A spend from a wallet has no processor fee.
  const split = splitSale({
    gross: body.amount,
    salesTax: body.sales_tax ?? 0,
    processingFee: 0,
    feePaidBy: DEFAULT_FEE_PAYER,
    creatorBps: creatorBpsFor(body.creator_percent, participantBps),
  });
  const buyer = { wallet_id: wallet.id };
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  if (split.creatorAmount > 0) postings.push({ debit: buyer, credit: { participant_id: body.creator_id }, amount: split.creatorAmount });
  if (split.platformAmount > 0) postings.push({ debit: buyer, credit: { system: "platform_revenue" }, amount: split.platformAmount });
  if (split.salesTax > 0) postings.push({ debit: buyer, credit: { system: "sales_tax_payable" }, amount: split.salesTax });
  const request: PostRequestInput = {
    org_id: scope.orgId,
    livemode: scope.livemode,
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
  let result;
  try {
    result = await deps.ledger.post(request);
  } catch (e) {
    if (e instanceof LedgerOutcomeUnknown) throw outcomeUnknown();
    throw e;
  }
  await upsertSpend(deps.sql, scope, {
    reference_id: body.reference_id,
    transaction_id: result.transaction_id,
    consumer_sub: body.consumer_sub,
    consumer_wallet_id: wallet.id,
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
  const spend = {
    consumer_transaction_id: result.transaction_id,
    platform_transaction_id: result.transaction_id,
    reference_id: body.reference_id,
    amount_cents: body.amount,
    creator_id: body.creator_id,
    creator_amount_cents: split.creatorAmount,
    platform_amount_cents: split.platformAmount,
    sales_tax_cents: split.salesTax,
    creator_percent: split.creatorBps / 100,
    wallet_id: wallet.id,
    wallet_balance_cents: balanceOf(result, wallet.id),
    creator_balance_cents: balanceOf(result, creator.wallet_id),
    created_at: result.created_at,
  };
  if (result.duplicate) {
    throw new DomainError("duplicate_reference_id", `A shared spend with reference_id ${body.reference_id} exists`, {
      extra: { existing_transaction_id: result.transaction_id, spend },
    });
  }
  return { status: 201, body: { spend } };
}

/**
 * The reversal as a ledger request: a full refund of the spend's sale back to the buyer's wallet. The ledger owns
 * the rule (refundParts in @treasury/money-rules and the engine's cover): the creator's part comes from what is available, and what
 * the creator no longer has is booked to the platform-funded creator_receivable, so the buyer is always made whole.
 */
function reversalRequest(scope: Scope, spend: SpendRow, rev: ReversalRow): PostRequestInput {
  return {
    org_id: scope.orgId,
    livemode: scope.livemode,
    kind: "refund",
    reference_id: spendReversalReference(spend.transaction_id),
    description: `Reversal of shared wallet spend ${spend.reference_id}`,
    metadata: { sale_transaction_id: spend.transaction_id, spend_reference_id: spend.reference_id, reason: rev.reason },
    refund: { sale_reference: spendSaleReference(spend.reference_id), refund_from: "both", ...(rev.reason === null ? {} : { reason: rev.reason }) },
  };
}

async function driveReversal(deps: PaymentsDeps, scope: Scope, spend: SpendRow, rev: ReversalRow): Promise<Record<string, unknown>> {
  let result;
  try {
    result = await deps.ledger.post(reversalRequest(scope, spend, rev));
  } catch (e) {
    if (e instanceof LedgerOutcomeUnknown) throw outcomeUnknown();
    throw e;
  }
  const creatorWallet = (await deps.ledger.participantInfo(scope, spend.creator_id)).wallet_id;
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
  await withTx(deps.sql, async (tx) => {
    if (await markReversed(tx, scope, spend.transaction_id, result.transaction_id, reversal)) await setSpendStatus(tx, scope, spend.transaction_id, "reversed");
  });
  const stored = await findReversal(deps.sql, scope, spend.transaction_id);
  return stored?.response ?? reversal;
}

export async function reverseSharedWalletSpend(
  deps: PaymentsDeps,
  scope: Scope,
  auth: AuthContext,
  body: ReverseBody,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const spend = await findSpendByTransaction(deps.sql, scope, body.sale_transaction_id);
  if (spend === undefined) {
    throw new DomainError("transaction_not_found", `No shared spend with transaction ${body.sale_transaction_id}`, {
      hint: "sale_transaction_id is the spend's platform_transaction_id",
    });
  }
  const existing = await findReversal(deps.sql, scope, spend.transaction_id);
  if (existing?.status === "reversed") {
    throw new DomainError("duplicate_reversal_reference", `Shared spend ${spend.transaction_id} was already reversed`, {
      extra: { existing_transaction_id: existing.reversal_transaction_id, reversal: existing.response },
    });
  }
  let rev = existing;
  if (rev === undefined) {
    rev = await withTx(deps.sql, async (tx) => {
      const locked = await findSpendByTransaction(tx, scope, spend.transaction_id, true);
      if (locked === undefined) throw new Error("spend vanished");
      const again = await findReversal(tx, scope, spend.transaction_id);
      if (again !== undefined) return again;
      await setSpendStatus(tx, scope, spend.transaction_id, "reversing");
      return insertReversal(tx, scope, {
        saleTransactionId: spend.transaction_id,
        spendReferenceId: spend.reference_id,
        reason: body.reason ?? null,
        metadata: body.metadata ?? {},
        requestId: auth.request_id,
        keyId: auth.key_id,
      });
    });
    if (rev.status === "reversed") {
      throw new DomainError("duplicate_reversal_reference", `Shared spend ${spend.transaction_id} was already reversed`, {
        extra: { existing_transaction_id: rev.reversal_transaction_id, reversal: rev.response },
      });
    }
  }
  const reversal = await driveReversal(deps, scope, spend, rev);
  return { status: 200, body: { reversal } };
}

/** Reconciler hook: reversals recorded but not settled (a crash or a ledger timeout in between). */
export async function driveStuckReversals(deps: PaymentsDeps, graceMs: number, limit: number, log: Logger): Promise<number> {
  const rows = (await stuckReversals(deps.sql, graceMs, limit)).map((rev) => ({ ...rev, id: rev.sale_transaction_id }));
  return driveEach(log, { noun: "shared-spend reversal", idField: "sale_transaction_id" }, rows, async (rev) => {
    const scope = { orgId: rev.org_id, livemode: rev.livemode };
    const spend = await findSpendByTransaction(deps.sql, scope, rev.sale_transaction_id);
    if (spend === undefined) return { status: "no shared spend recorded for it" };
    await driveReversal(deps, scope, spend, rev);
    return { status: "reversed" };
  });
}
