/**
 * createCheckoutSession: hosted (`session`), direct card (`payment_method_id`) or wallet-funded
 * (`purchase_mode: direct_funded_wallet`). Direct modes record the sale at once through the completion use
 * case. A repeated idempotency_key is a replay: it returns the session as first answered.
 *
 * Errors: validation_error, participant_not_found, wallet_not_found (no consumer wallet for the buyer),
 * rail_not_enabled (usdc in live), provider_not_configured, card_declined, insufficient_balance, risk_denied, risk_unavailable,
 * idempotency_conflict, service_timeout.
 */
import { cents, DomainError, isErrorCode, newUuid, percentToBps, schemas, type Tenant } from "@treasury/contracts";
import { creatorBpsFor, saleInputProblem, shareSale, type SaleShares } from "@treasury/money-rules";
import { requestHash } from "@treasury/service-kit";
import type { z } from "zod";
import { recordedCheckout, type CheckoutMode, type CheckoutRow, type NewCheckout } from "../domain/records.ts";
import { liveReturnUrlProblem } from "../domain/return-urls.ts";
import { driveCompletion, paymentIdOf } from "./complete-checkout.ts";
import { CHECKOUT_TTL_MS, CURRENCY, type PaymentsDeps } from "./deps.ts";
import type { CheckoutProvider, ParticipantInfo, ProviderName } from "./ports.ts";
import { presentCheckout, saleReferenceOf } from "./present.ts";

export type CreateCheckoutBody = z.output<typeof schemas.CreateCheckoutBody>;

/** Sandbox test payment methods (docs/api.md, Checkout). */
export const TEST_PAYMENT_METHODS = { pm_card_visa: "succeeds", pm_card_chargeDeclined: "declines" } as const;

/** The session as answered when it was created (a replay answers the same), and whether this request was a replay. */
export interface CreatedCheckout {
  checkoutSession: Record<string, unknown>;
  replayed: boolean;
}

function invalid(path: string, message: string, hint?: string): DomainError {
  return new DomainError("validation_error", `Invalid body: ${path}: ${message}`, { details: [{ path, message }], ...(hint !== undefined ? { hint } : {}) });
}

/** success_url receives checkout_session_id as a query parameter (spec). */
export function withSessionId(url: string, id: string): string {
  const u = new URL(url);
  u.searchParams.set("checkout_session_id", id);
  return u.toString();
}

function modeOf(body: CreateCheckoutBody): CheckoutMode {
  if (body.purchase_mode === "direct_funded_wallet") return "direct_funded_wallet";
  return body.payment_method_id !== undefined ? "direct" : "session";
}

/**
 * Who takes the buyer's payment. The built-in `soledgic` page is the sandbox's card simulator and cannot take a
 * real card, so a live hosted session is the card processor's (`stripe`) whether or not the body names it, and a
 * live body asking for `soledgic` is refused rather than given a page nobody can pay on.
 */
function providerOf(body: CreateCheckoutBody, tenant: Tenant, mode: CheckoutMode): ProviderName {
  if (!tenant.livemode || mode !== "session") return body.sandbox_checkout_provider ?? "soledgic";
  if (body.sandbox_checkout_provider === "soledgic")
    throw invalid(
      "sandbox_checkout_provider",
      "soledgic is the sandbox's simulated card page; live buyers pay through the card processor",
      "Omit sandbox_checkout_provider (or send stripe) with a live key",
    );
  return "stripe";
}

/** Cross-field rules the body schema cannot express, checked before anything is read or written. */
function checkBody(body: CreateCheckoutBody, tenant: Tenant): void {
  const amounts = saleInputProblem(body.amount, body.sales_tax ?? 0);
  if (amounts !== undefined) throw invalid(amounts.path, amounts.message);
  const badUrl = liveReturnUrlProblem(body, tenant.livemode);
  if (badUrl !== undefined) throw invalid(badUrl.path, badUrl.message);
  if (body.purchase_mode === "direct_funded_wallet") {
    if (body.payment_method_id !== undefined)
      throw invalid("payment_method_id", "not allowed with purchase_mode direct_funded_wallet (the buyer's wallet pays)");
    if (body.customer_id === undefined && body.buyer_user_id === undefined) {
      throw invalid(
        "customer_id",
        "customer_id or buyer_user_id (the owner of the buyer's consumer_credit wallet) is required with purchase_mode direct_funded_wallet",
        "POST /v1/wallets with owner_id creates the buyer's consumer_credit wallet",
      );
    }
    if (body.customer_id !== undefined && body.buyer_user_id !== undefined && body.customer_id !== body.buyer_user_id) {
      throw invalid("buyer_user_id", "must equal customer_id when both are given");
    }
  }
  if (tenant.livemode && body.payment_rail === "usdc") {
    throw new DomainError("rail_not_enabled", "The usdc payment rail is not enabled for live payments", {
      hint: 'POST /v1/checkout-sessions with payment_rail: "card"',
    });
  }
  if (body.payment_method_id !== undefined) {
    if (tenant.livemode) {
      throw new DomainError("provider_not_configured", "Live direct card payments need a configured card processor", {
        hint: "POST /v1/checkout-sessions without payment_method_id returns a hosted checkout_url",
      });
    }
    const outcome = (TEST_PAYMENT_METHODS as Record<string, string>)[body.payment_method_id];
    if (outcome === undefined)
      throw invalid(
        "payment_method_id",
        "unknown sandbox payment method",
        "Sandbox test payment methods: pm_card_visa (succeeds), pm_card_chargeDeclined (declines)",
      );
    if (outcome === "declines")
      throw new DomainError("card_declined", "The card was declined", { hint: "Use payment_method_id pm_card_visa for a successful sandbox payment" });
  }
}

async function replay(deps: PaymentsDeps, existing: CheckoutRow, hash: string): Promise<CreatedCheckout> {
  const now = deps.now();
  if (existing.request_hash !== hash) {
    throw new DomainError("idempotency_conflict", `idempotency_key ${existing.idempotency_key ?? ""} was used with a different request`, {
      extra: { checkout_session: presentCheckout(existing, now) },
    });
  }
  let row = existing;
  if (row.mode !== "session") {
    // A direct payment's first outcome is its answer: a refusal is refused again, one still running is finished.
    if (row.status === "failed" && row.failure_code !== null) {
      const code = isErrorCode(row.failure_code) ? row.failure_code : "checkout_not_pending";
      throw new DomainError(code, row.failure_reason ?? "The payment failed", { extra: { checkout_session: presentCheckout(row, now) } });
    }
    if (row.status === "completing") row = await driveCompletion(deps, row);
  }
  return { checkoutSession: row.create_response ?? presentCheckout(row, now), replayed: true };
}

/** Who takes the payment, checked before anything is read or written. */
function chooseProvider(deps: PaymentsDeps, body: CreateCheckoutBody, tenant: Tenant, mode: CheckoutMode): { name: ProviderName; provider: CheckoutProvider } {
  const name = providerOf(body, tenant, mode);
  const provider = deps.providers[name];
  if (mode !== "direct_funded_wallet") provider.assertConfigured(tenant.livemode);
  if (mode === "direct" && name !== "soledgic") {
    throw new DomainError("provider_not_configured", `Direct payments with payment_method_id are simulated by the soledgic provider only`, {
      hint: 'POST /v1/checkout-sessions with sandbox_checkout_provider: "soledgic", or without payment_method_id for a hosted stripe checkout_url',
    });
  }
  return { name, provider };
}

/** The creator (and its split) and, for a wallet-funded purchase, the buyer's consumer_credit wallet. */
async function resolveParties(
  deps: PaymentsDeps,
  tenant: Tenant,
  body: CreateCheckoutBody,
  mode: CheckoutMode,
): Promise<{ participant: ParticipantInfo; split: SaleShares; buyerWalletId: string | null }> {
  const participant = await deps.ledger.participantInfo(tenant, body.participant_id);
  const participantBps = participant.default_split_percent === null ? null : percentToBps(participant.default_split_percent);
  // The shares before any processor fee: what the session's breakdown shows until a live payment reports its fee.
  const split = shareSale(cents(body.amount), cents(body.sales_tax ?? 0), creatorBpsFor(body.creator_percent, participantBps));
  const buyerOwner = body.customer_id ?? body.buyer_user_id;
  if (mode !== "direct_funded_wallet" || buyerOwner === undefined) return { participant, split, buyerWalletId: null };
  const wallet = await deps.ledger.findWallet(tenant, buyerOwner, "consumer_credit");
  if (wallet === undefined) {
    throw new DomainError("wallet_not_found", `No consumer_credit wallet for ${buyerOwner}`, {
      hint: "POST /v1/wallets with owner_id creates it; top it up with POST /v1/wallets/{wallet_id}/topups",
    });
  }
  return { participant, split, buyerWalletId: wallet.id };
}

/** The provider's hosted page of a `session` checkout: where the buyer pays, and the provider's payment id. */
async function openHostedSession(
  provider: CheckoutProvider,
  tenant: Tenant,
  body: CreateCheckoutBody,
  at: { id: string; hostedUrl: string; expiresAt: Date },
): Promise<{ checkoutUrl: string; paymentId: string | null }> {
  return provider.createHostedSession({
    sessionId: at.id,
    amount: body.amount,
    currency: CURRENCY,
    productName: body.product_name ?? body.product_id ?? "Purchase",
    successUrl: body.success_url === undefined ? at.hostedUrl : withSessionId(body.success_url, at.id),
    cancelUrl: body.cancel_url ?? `${at.hostedUrl}`,
    hostedUrl: at.hostedUrl,
    livemode: tenant.livemode,
    expiresAt: at.expiresAt,
    metadata: { checkout_session_id: at.id },
  });
}

interface CheckoutPlan {
  id: string;
  now: Date;
  expiresAt: Date;
  mode: CheckoutMode;
  providerName: ProviderName;
  participant: ParticipantInfo;
  split: SaleShares;
  buyerWalletId: string | null;
  hosted: { checkoutUrl: string | null; paymentId: string | null };
  hash: string;
}

function newCheckoutRow(deps: PaymentsDeps, tenant: Tenant, body: CreateCheckoutBody, plan: CheckoutPlan): NewCheckout {
  const { id, now, mode, split } = plan;
  const direct = mode !== "session";
  return {
    id,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    mode,
    provider: plan.providerName,
    payment_rail: body.payment_rail ?? "card",
    // Direct payments record their completion intent with the session itself.
    status: direct ? "completing" : "pending",
    participant_id: body.participant_id,
    merchant_name: plan.participant.display_name ?? body.participant_id,
    amount: body.amount,
    currency: CURRENCY,
    sales_tax: split.salesTax,
    creator_bps: split.creatorBps,
    creator_amount: split.creatorShare,
    platform_amount: split.platformShare,
    hold_funds: body.hold_funds ?? false,
    product_id: body.product_id ?? null,
    product_name: body.product_name ?? null,
    customer_email: body.customer_email ?? null,
    customer_id: body.customer_id ?? null,
    buyer_user_id: body.buyer_user_id ?? null,
    buyer_wallet_id: plan.buyerWalletId,
    payment_method_id: body.payment_method_id ?? null,
    success_url: body.success_url ?? null,
    cancel_url: body.cancel_url ?? null,
    metadata: body.metadata ?? {},
    idempotency_key: body.idempotency_key ?? null,
    request_hash: plan.hash,
    checkout_url: plan.hosted.checkoutUrl,
    payment_id: direct ? paymentIdOf({ id, mode }) : plan.hosted.paymentId,
    ledger_reference: direct ? saleReferenceOf({ id }) : null,
    completion_source: direct ? "direct" : null,
    expires_at: plan.expiresAt,
    created_at: now,
    create_response: null,
    processing_fee_paid_by: body.processing_fee_paid_by ?? "platform",
    // A session at the card processor is asked about if its paid or expired event has not come by then.
    processor_check_at:
      !direct && plan.providerName === "stripe" && plan.hosted.paymentId !== null ? new Date(now.getTime() + deps.processorCheckAfterMs) : null,
  };
}

/** A hosted session's answer, known before the insert: stored with the row (one commit, not two). */
function hostedAnswerOf(row: NewCheckout, now: Date): Record<string, unknown> {
  return presentCheckout(recordedCheckout(row, now), now);
}

/** Whom velocity by buyer counts: the buyer's id, else their email. */
function buyerOf(body: CreateCheckoutBody): { buyer_id?: string } {
  const buyer = body.customer_id ?? body.buyer_user_id ?? body.customer_email;
  return buyer === undefined ? {} : { buyer_id: buyer };
}

/** Everything the session will record, read and asked before anything is written. */
async function planCheckout(
  deps: PaymentsDeps,
  tenant: Tenant,
  body: CreateCheckoutBody,
  { altBaseUrl, hash, clientIp }: { altBaseUrl: string; hash: string; clientIp: string | undefined },
): Promise<CheckoutPlan> {
  checkBody(body, tenant);
  const mode = modeOf(body);
  const { name: providerName, provider } = chooseProvider(deps, body, tenant, mode);
  const { participant, split, buyerWalletId } = await resolveParties(deps, tenant, body, mode);
  const id = newUuid();
  // Before anything is written or opened at a provider: a denial leaves no session behind. The key is the
  // client's idempotency key when there is one, so a retry is the same evaluation (counted once).
  await deps.risk.check(tenant, {
    operation: "checkout",
    key: `checkout:${body.idempotency_key ?? id}`,
    amount: body.amount,
    participant_id: body.participant_id,
    ...buyerOf(body),
    ...(clientIp === undefined ? {} : { ip: clientIp }),
  });
  const now = deps.now();
  const expiresAt = new Date(now.getTime() + CHECKOUT_TTL_MS);
  const hostedUrl = `${altBaseUrl}/v1/checkout/${id}`;
  const hosted = mode === "session" ? await openHostedSession(provider, tenant, body, { id, hostedUrl, expiresAt }) : { checkoutUrl: null, paymentId: null };
  return { id, now, expiresAt, mode, providerName, participant, split, buyerWalletId, hosted, hash };
}

export async function createCheckoutSession(
  deps: PaymentsDeps,
  tenant: Tenant,
  body: CreateCheckoutBody,
  altBaseUrl: string,
  clientIp?: string,
): Promise<CreatedCheckout> {
  const hash = requestHash(body);
  if (body.idempotency_key !== undefined) {
    const existing = await deps.checkouts.findByKey(tenant, body.idempotency_key);
    if (existing !== undefined) return replay(deps, existing, hash);
  }
  const plan = await planCheckout(deps, tenant, body, { altBaseUrl, hash, clientIp });
  const row = newCheckoutRow(deps, tenant, body, plan);
  const hostedAnswer = plan.mode === "session" ? hostedAnswerOf(row, plan.now) : null;
  const inserted = await deps.checkouts.insert({ ...row, create_response: hostedAnswer });
  if (inserted === undefined) {
    // A concurrent request with the same key won the insert: answer as its replay.
    const existing = body.idempotency_key === undefined ? undefined : await deps.checkouts.findByKey(tenant, body.idempotency_key);
    if (existing === undefined) throw new Error("checkout insert conflicted without an idempotency key");
    return replay(deps, existing, hash);
  }
  if (hostedAnswer !== null) return { checkoutSession: hostedAnswer, replayed: false };
  const final = await driveCompletion(deps, inserted);
  const presented = presentCheckout(final, deps.now());
  await deps.checkouts.storeCreateResponse(final.id, presented);
  return { checkoutSession: presented, replayed: false };
}
