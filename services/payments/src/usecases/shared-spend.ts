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
import { cents, DomainError, schemas, type AuthContext, type PostRequestInput, type PostResult } from "@treasury/contracts";
import { withTx } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { z } from "zod";
import { LedgerOutcomeUnknown, type Scope } from "../adapters/ledger.ts";
import { computeSplit, creatorBpsFor } from "../domain/split.ts";
import {
  deleteReversingIntent,
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
export const SPEND_REVERSAL_KIND = "shared_spend_reversal";

function outcomeUnknown(): DomainError {
  return new DomainError("service_timeout", "The ledger did not answer in time; retry with the same reference_id to read the outcome");
}

function balanceOf(result: PostResult, walletId: string): number | null {
  return result.wallets[walletId]?.balance ?? null;
}

export async function spendSharedWallet(deps: PaymentsDeps, scope: Scope, body: SpendBody): Promise<{ status: number; body: Record<string, unknown> }> {
  if ((body.sales_tax ?? 0) > body.amount) {
    throw new DomainError("validation_error", "Invalid body: sales_tax: must not exceed amount", { details: [{ path: "sales_tax", message: "must not exceed amount" }] });
  }
  const creator = await deps.ledger.participantInfo(scope, body.creator_id);
  const wallet = await deps.ledger.findWallet(scope, body.consumer_sub, "consumer_credit");
  if (wallet === undefined) {
    throw new DomainError("wallet_not_found", `No consumer_credit wallet for subject ${body.consumer_sub}`, { hint: "POST /v1/wallets with owner_id = the consumer's subject creates it" });
  }
  const split = computeSplit(cents(body.amount), cents(body.sales_tax ?? 0), creatorBpsFor(body.creator_percent, creator.default_split_percent));
  const buyer = { wallet_id: wallet.id };
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  if (split.creator > 0) postings.push({ debit: buyer, credit: { participant_id: body.creator_id }, amount: split.creator });
  if (split.platform > 0) postings.push({ debit: buyer, credit: { system: "platform_revenue" }, amount: split.platform });
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
    creator_amount: split.creator,
    platform_amount: split.platform,
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
    creator_amount_cents: split.creator,
    platform_amount_cents: split.platform,
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

function reversalRequest(scope: Scope, spend: SpendRow, rev: ReversalRow): PostRequestInput {
  const buyer = { wallet_id: spend.consumer_wallet_id };
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  if (rev.creator_take > 0) postings.push({ debit: { participant_id: spend.creator_id }, credit: buyer, amount: rev.creator_take });
  if (rev.receivable_amount > 0) postings.push({ debit: { system: "creator_receivable", entity_id: spend.creator_id }, credit: buyer, amount: rev.receivable_amount });
  if (spend.platform_amount > 0) postings.push({ debit: { system: "platform_revenue" }, credit: buyer, amount: spend.platform_amount });
  if (spend.sales_tax > 0) postings.push({ debit: { system: "sales_tax_payable" }, credit: buyer, amount: spend.sales_tax });
  return {
    org_id: scope.orgId,
    livemode: scope.livemode,
    kind: SPEND_REVERSAL_KIND,
    reference_id: spend.transaction_id,
    amount: spend.amount,
    description: `Reversal of shared wallet spend ${spend.reference_id}`,
    metadata: { sale_transaction_id: spend.transaction_id, spend_reference_id: spend.reference_id, reason: rev.reason },
    postings,
    // The creator's part is taken only as far as it is available: the plan's take must still be there.
    preconditions: rev.creator_take > 0 ? [{ wallet: { participant_id: spend.creator_id }, available_gte: rev.creator_take }] : [],
  };
}

async function driveReversal(deps: PaymentsDeps, scope: Scope, spend: SpendRow, rev: ReversalRow): Promise<Record<string, unknown>> {
  let result;
  try {
    result = await deps.ledger.post(reversalRequest(scope, spend, rev));
  } catch (e) {
    if (e instanceof DomainError && e.code === "insufficient_balance") {
      // The creator's balance moved after the plan was made: nothing moved; drop the intent so a retry re-plans.
      await withTx(deps.sql, async (tx) => {
        await deleteReversingIntent(tx, scope, spend.transaction_id);
        await setSpendStatus(tx, scope, spend.transaction_id, "settled");
      });
      throw new DomainError("insufficient_balance", "The creator's balance changed while the reversal was planned; retry the reversal", { hint: "POST /v1/wallets/shared-spend/reverse again with the same sale_transaction_id" });
    }
    if (e instanceof LedgerOutcomeUnknown) throw outcomeUnknown();
    throw e;
  }
  const creatorWallet = (await deps.ledger.participantInfo(scope, spend.creator_id)).wallet_id;
  const reversal = {
    consumer_reversal_transaction_id: result.transaction_id,
    platform_reversal_transaction_id: result.transaction_id,
    sale_transaction_id: spend.transaction_id,
    reference_id: spend.reference_id,
    status: "reversed",
    amount_cents: spend.amount,
    creator_reversed_cents: rev.creator_take,
    creator_receivable_cents: rev.receivable_amount,
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

export async function reverseSharedWalletSpend(deps: PaymentsDeps, scope: Scope, auth: AuthContext, body: ReverseBody): Promise<{ status: number; body: Record<string, unknown> }> {
  const spend = await findSpendByTransaction(deps.sql, scope, body.sale_transaction_id);
  if (spend === undefined) {
    throw new DomainError("transaction_not_found", `No shared spend with transaction ${body.sale_transaction_id}`, { hint: "sale_transaction_id is the spend's platform_transaction_id" });
  }
  const existing = await findReversal(deps.sql, scope, spend.transaction_id);
  if (existing?.status === "reversed") {
    throw new DomainError("duplicate_reversal_reference", `Shared spend ${spend.transaction_id} was already reversed`, {
      extra: { existing_transaction_id: existing.reversal_transaction_id, reversal: existing.response },
    });
  }
  let rev = existing;
  if (rev === undefined) {
    // Plan the creator's part from the available balance now; the post's precondition re-checks it atomically.
    const creator = await deps.ledger.getParticipant(scope, spend.creator_id);
    const available = Math.max(0, Number(creator["available_balance_cents"] ?? 0));
    const take = Math.min(available, spend.creator_amount);
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
        creatorTake: take,
        receivable: spend.creator_amount - take,
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
  let n = 0;
  for (const rev of await stuckReversals(deps.sql, graceMs, limit)) {
    const scope = { orgId: rev.org_id, livemode: rev.livemode };
    try {
      const spend = await findSpendByTransaction(deps.sql, scope, rev.sale_transaction_id);
      if (spend === undefined) continue;
      await driveReversal(deps, scope, spend, rev);
      n++;
    } catch (err) {
      log.warn({ err, sale_transaction_id: rev.sale_transaction_id }, "reconciler could not settle a reversal yet");
    }
  }
  return n;
}
