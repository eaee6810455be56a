/**
 * Completing a checkout, per docs/architecture.md, "Money across services":
 *   1. record the intent: the session becomes `completing` with ledger reference `checkout:<id>`;
 *   2. one svc.ledger.post records the sale (creator share, platform share, sales tax; the hold on the creator
 *      share when hold_funds) — idempotent on the reference, so any number of drivers move money once;
 *   3. one payments transaction marks the session completed and writes `checkout.completed` to the outbox.
 * The reconciler re-drives sessions stuck between 1 and 3. Sandbox completion, the hosted page's card form and
 * direct payments all come through here.
 *
 * Errors: checkout_session_not_found, checkout_not_pending (failed), checkout_expired, insufficient_balance /
 * participant_not_found / wallet_not_found / wallet_not_active (the ledger refused: the session is failed),
 * service_timeout (the ledger did not answer: outcome unknown, the reconciler finishes it).
 */
import { DomainError, type PostRequestInput, type Tenant } from "@treasury/contracts";
import { postAndSettle, type LedgerPosted, type NewEvent } from "@treasury/service-kit";
import { checkoutSplit } from "../domain/checkout-sale.ts";
import type { CheckoutRow, CompletionIntent, ProcessorPayment } from "../domain/records.ts";
import { CURRENCY, type PaymentsDeps } from "./deps.ts";
import { presentCheckout, publicStatus, saleReferenceOf } from "./present.ts";

export const SALE_KIND = "checkout_sale";

/** Ledger refusals that are final: nothing moved, and retrying the same request cannot succeed. */
const DEFINITIVE = new Set(["insufficient_balance", "participant_not_found", "wallet_not_found", "wallet_not_active"]);

export interface CompletionInput {
  source: "sandbox_api" | "hosted_page" | "direct" | "processor";
  sandboxIdempotencyKey?: string | undefined;
  /** A live payment the card processor took: its ids and fee, stored with the intent. */
  processor?: ProcessorPayment | undefined;
}

export function paymentIdOf(row: { id: string; mode: string }): string {
  return `${row.mode === "direct_funded_wallet" ? "wpay" : "pay"}_${row.id.replace(/-/g, "")}`;
}

function intentOf(id: string, input: CompletionInput): CompletionIntent {
  return {
    ledger_reference: saleReferenceOf({ id }),
    payment_id_by_mode: { wallet: paymentIdOf({ id, mode: "direct_funded_wallet" }), other: paymentIdOf({ id, mode: "session" }) },
    completion_source: input.source,
    sandbox_idempotency_key: input.sandboxIdempotencyKey ?? null,
    processor: input.processor ?? null,
  };
}

/**
 * Step 1: pending → completing (or nothing to do). Returns the row to drive. The common case is one UPDATE;
 * only when it moves nothing is the row read (under its lock) to tell why.
 */
/** The session in `completing` (or past it); `replayed` when an earlier call had already moved it. */
async function recordIntent(deps: PaymentsDeps, tenant: Tenant, id: string, input: CompletionInput): Promise<{ row: CheckoutRow; replayed: boolean }> {
  const intent = intentOf(id, input);
  const moved = await deps.checkouts.markCompleting(tenant, id, deps.now(), intent);
  if (moved !== undefined) return { row: moved, replayed: false };
  return deps.checkouts.locked(tenant, id, async (row, tx) => {
    if (row === undefined) throw new DomainError("checkout_session_not_found", `Checkout session ${id} not found`);
    if (row.status === "completed" || row.status === "completing") return { row, replayed: true };
    const now = deps.now();
    if (row.status === "failed") {
      throw new DomainError("checkout_not_pending", `Checkout session ${id} failed and cannot be completed`, {
        extra: { checkout_session: presentCheckout(row, now) },
      });
    }
    if (input.processor === undefined && publicStatus(row, now) === "expired") {
      throw new DomainError("checkout_expired", `Checkout session ${id} expired at ${row.expires_at.toISOString()}`, {
        hint: "POST /v1/checkout-sessions creates a new session",
        extra: { checkout_session: presentCheckout(row, now) },
      });
    }
    const updated = await tx.markCompleting(now, intent);
    if (updated === undefined) throw new Error(`checkout ${id} did not move to completing under its lock`);
    return { row: updated, replayed: false };
  });
}

/**
 * The ledger request of a session's sale: built only from the stored row, so every driver sends the same one.
 * A card payment's processor fee (known when a live completion starts) is charged by the sale arithmetic, as for
 * record-sale: platform revenue receives everything but the creator's amount and the tax, and the fee is booked
 * from platform cash to processing_fees.
 */
export function saleRequest(row: CheckoutRow): PostRequestInput {
  const reference = row.ledger_reference ?? saleReferenceOf(row);
  const creator = { participant_id: row.participant_id };
  if (row.mode === "direct_funded_wallet" && row.buyer_wallet_id === null) throw new Error(`wallet checkout ${row.id} has no buyer wallet`);
  if (row.mode === "direct_funded_wallet" && row.processing_fee > 0) throw new Error(`wallet checkout ${row.id} has a processor fee`);
  const buyerWallet = row.mode === "direct_funded_wallet" && row.buyer_wallet_id !== null ? { wallet_id: row.buyer_wallet_id } : undefined;
  const source = buyerWallet ?? { system: "platform_cash" as const };
  const split = checkoutSplit(row);
  const revenue = split.gross - split.salesTax - split.creatorAmount;
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  if (split.creatorAmount > 0) postings.push({ debit: source, credit: creator, amount: split.creatorAmount });
  if (revenue > 0) postings.push({ debit: source, credit: { system: "platform_revenue" }, amount: revenue });
  if (split.salesTax > 0) postings.push({ debit: source, credit: { system: "sales_tax_payable" }, amount: split.salesTax });
  if (split.processingFee > 0) postings.push({ debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: split.processingFee });
  const hold = row.hold_funds && split.creatorAmount > 0;
  return {
    org_id: row.org_id,
    livemode: row.livemode,
    kind: SALE_KIND,
    reference_id: reference,
    amount: row.amount,
    description: `Checkout ${row.id}${row.product_name !== null ? `: ${row.product_name}` : ""}`,
    metadata: { checkout_session_id: row.id, product_id: row.product_id, mode: row.mode },
    postings,
    holds_create: hold
      ? [
          {
            wallet: creator,
            amount: split.creatorAmount,
            reference_id: checkoutHoldReference(row.id),
            reason_code: "checkout_hold",
            description: `Creator share of checkout ${row.id}`,
          },
        ]
      : [],
    preconditions: buyerWallet !== undefined ? [{ wallet: buyerWallet, available_gte: row.amount }] : [],
    sale: {
      sale_reference: reference,
      participant_id: row.participant_id,
      gross: row.amount,
      creator_amount: split.creatorAmount,
      platform_amount: split.platformAmount,
      sales_tax: split.salesTax,
      ...(split.processingFee > 0 ? { processing_fee: split.processingFee } : {}),
      ...(hold ? { hold_index: 0 } : {}),
    },
    result_extra: { checkout_session_id: row.id },
  };
}

function completedEventData(row: CheckoutRow): Record<string, unknown> {
  const split = checkoutSplit(row);
  return {
    checkout_session_id: row.id,
    payment_id: row.payment_id,
    sale_transaction_id: row.sale_transaction_id,
    sale_reference: saleReferenceOf(row),
    participant_id: row.participant_id,
    product_id: row.product_id,
    product_name: row.product_name,
    amount_cents: row.amount,
    currency: CURRENCY,
    sales_tax_amount_cents: row.sales_tax,
    creator_amount_cents: split.creatorAmount,
    platform_amount_cents: split.platformAmount,
    ...(split.processingFee > 0 ? { processing_fee_cents: split.processingFee, processing_fee_paid_by: split.feePaidBy } : {}),
    hold_id: row.hold_id,
    mode: row.mode,
    metadata: row.metadata,
    sandbox: !row.livemode,
    ...(!row.livemode ? { sandbox_idempotency_key: row.sandbox_idempotency_key } : {}),
  };
}

/**
 * Step 3: completing → completed plus the outbox event, in one statement; only the first settler writes. The
 * event is built from the completing row and what settling sets (nothing else changes a completing session).
 */
async function settle(deps: PaymentsDeps, row: CheckoutRow, saleTransactionId: string, holdId: string | null): Promise<CheckoutRow> {
  const fields = { sale_transaction_id: saleTransactionId, hold_id: holdId, completed_at: deps.now() };
  const event: NewEvent = {
    type: "checkout.completed",
    org_id: row.org_id,
    livemode: row.livemode,
    data: completedEventData({ ...row, ...fields, status: "completed" }),
  };
  const done = await deps.checkouts.settleCompleted(row.id, fields, event);
  if (done !== undefined) return done;
  const current = await deps.checkouts.find({ orgId: row.org_id, livemode: row.livemode }, row.id);
  if (current === undefined) throw new Error(`checkout ${row.id} vanished`);
  return current;
}

export function failedEvent(row: CheckoutRow): NewEvent {
  return { type: "checkout.failed", org_id: row.org_id, livemode: row.livemode, data: failedEventData(row) };
}

/** The ledger refused for good: completing → failed plus `checkout.failed`. */
export async function failCompleting(deps: PaymentsDeps, row: CheckoutRow, code: string, reason: string): Promise<void> {
  await deps.checkouts.failCompleting(row.id, { failure_code: code, failure_reason: reason }, failedEvent);
}

export function failedEventData(row: CheckoutRow): Record<string, unknown> {
  return {
    checkout_session_id: row.id,
    participant_id: row.participant_id,
    product_id: row.product_id,
    amount_cents: row.amount,
    currency: CURRENCY,
    failure_code: row.failure_code,
    failure_reason: row.failure_reason,
    metadata: row.metadata,
    sandbox: !row.livemode,
  };
}

const secondsSince = (startedAt: number): number => (performance.now() - startedAt) / 1000;

/** The reference of the hold a `hold_funds` checkout puts on the creator's share. */
const checkoutHoldReference = (checkoutId: string): string => `checkout_hold:${checkoutId}`;

/** Steps 2 and 3 for a session already `completing`. Used by completion and by the reconciler. */
export async function driveCompletion(deps: PaymentsDeps, row: CheckoutRow): Promise<CheckoutRow> {
  return postAndSettle<LedgerPosted, CheckoutRow>({
    post: async () => {
      const postedAt = performance.now();
      const result = await deps.ledger.post(saleRequest(row));
      deps.observeStep?.("ledger_post", secondsSince(postedAt));
      return result;
    },
    afterPost: deps.afterLedgerPost,
    settle: async (result) => {
      const settledAt = performance.now();
      // Found by its reference: the ledger adds the creator's rolling reserve hold to the same posting.
      const own = result.holds_created.find((h) => h.reference_id === checkoutHoldReference(row.id));
      const done = await settle(deps, row, result.transaction_id, own?.hold_id ?? null);
      deps.observeStep?.("settle", secondsSince(settledAt));
      return done;
    },
    isDefinitive: (e) => DEFINITIVE.has(e.code),
    refused: async (e) => {
      await failCompleting(deps, row, e.code, e.message);
      throw e;
    },
    pendingMessage: "The ledger did not answer in time; the checkout completes shortly, retry with the same request to read it",
  });
}

/** Completes a session (idempotent: a completed session is answered as it is). */
export async function completeCheckout(deps: PaymentsDeps, tenant: Tenant, id: string, input: CompletionInput): Promise<CheckoutRow> {
  return (await completeCheckoutReplay(deps, tenant, id, input)).checkout;
}

/** completeCheckout, saying whether an earlier call had completed (or begun completing) the session: a replay. */
export async function completeCheckoutReplay(
  deps: PaymentsDeps,
  tenant: Tenant,
  id: string,
  input: CompletionInput,
): Promise<{ checkout: CheckoutRow; replayed: boolean }> {
  const startedAt = performance.now();
  const { row, replayed } = await recordIntent(deps, tenant, id, input);
  deps.observeStep?.("intent", secondsSince(startedAt));
  return { checkout: row.status === "completed" ? row : await driveCompletion(deps, row), replayed };
}
