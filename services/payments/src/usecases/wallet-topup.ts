/**
 * Live wallet funding through the card processor's hosted checkout (docs/api.md, Wallet sessions): the wallet
 * page's top-up form records a top-up and sends the buyer to a processor checkout for the amount; the processor's
 * `checkout.session.completed` completes it, per docs/architecture.md, "Money across services":
 *   1. intent: the top-up becomes `completing` with the processor's fee and ledger reference
 *      `wallet_topup:stripe:<processor session id>` (derived from the processor's session, one per top-up);
 *   2. one svc.ledger.post credits the buyer's consumer_credit wallet from platform cash (the fee is booked from
 *      platform cash to processing_fees: the buyer receives the whole amount);
 *   3. the top-up is marked completed.
 * The reconciler re-drives top-ups stuck in `completing`.
 *
 * Errors (startLiveTopup): provider_not_configured (no processor credentials, or a key whose mode is not the
 * session's), service_unavailable (the processor did not answer: the form can be sent again, and finds the same
 * top-up).
 */
import { newId, type PostRequestInput } from "@treasury/contracts";
import { postAndSettle } from "@treasury/service-kit";
import type { ProcessorPayment, TopupRow, WalletSessionRow } from "../domain/records.ts";
import { CHECKOUT_TTL_MS, CURRENCY, type PaymentsDeps } from "./deps.ts";

export const TOPUP_KIND = "processor_topup";

/** Ledger refusals after which the same request can never succeed. */
const DEFINITIVE = new Set(["wallet_not_found", "wallet_not_active", "wallet_not_topupable"]);

/** Records the top-up of one form render and answers where the buyer pays (the same place on a double submit). */
export async function startLiveTopup(deps: PaymentsDeps, session: WalletSessionRow, amount: number, nonce: string, pageUrl: string): Promise<string> {
  deps.providers.stripe.assertConfigured(session.livemode);
  const topup = await deps.topups.insertOrFind({
    id: newId("wtop"),
    org_id: session.org_id,
    livemode: session.livemode,
    wallet_session_id: session.id,
    wallet_id: session.wallet_id,
    amount,
    nonce,
  });
  if (topup.checkout_url !== null) return topup.checkout_url;
  const hosted = await deps.providers.stripe.createHostedSession({
    sessionId: topup.id,
    amount: topup.amount,
    currency: CURRENCY,
    productName: "Wallet funds",
    successUrl: `${pageUrl}?topup=ok`,
    cancelUrl: pageUrl,
    hostedUrl: pageUrl,
    livemode: topup.livemode,
    expiresAt: new Date(deps.now().getTime() + CHECKOUT_TTL_MS),
    metadata: { wallet_topup_id: topup.id },
  });
  if (hosted.paymentId === null) throw new Error("the processor answered a checkout without its id");
  await deps.topups.setCheckout(topup.id, hosted.paymentId, hosted.checkoutUrl, new Date(deps.now().getTime() + deps.processorCheckAfterMs));
  return hosted.checkoutUrl;
}

export function topupRequest(row: TopupRow): PostRequestInput {
  if (row.ledger_reference === null) throw new Error(`top-up ${row.id} has no ledger reference`);
  const postings: NonNullable<PostRequestInput["postings"]> = [
    { debit: { system: "platform_cash" }, credit: { wallet_id: row.wallet_id }, amount: row.amount },
  ];
  if (row.processing_fee > 0) postings.push({ debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: row.processing_fee });
  return {
    org_id: row.org_id,
    livemode: row.livemode,
    kind: TOPUP_KIND,
    reference_id: row.ledger_reference,
    amount: row.amount,
    description: "Wallet top-up (card)",
    metadata: { wallet_topup_id: row.id, wallet_session_id: row.wallet_session_id, processor_session_id: row.processor_session_id },
    postings,
  };
}

/** Steps 2 and 3 for a top-up already `completing`. Used by the processor's event and by the reconciler. */
export async function driveTopup(deps: PaymentsDeps, row: TopupRow): Promise<TopupRow> {
  return postAndSettle({
    post: async () => (await deps.ledger.post(topupRequest(row))).transaction_id,
    afterPost: deps.afterLedgerPost,
    settle: async (transactionId) => (await deps.topups.settle(row.id, transactionId)) ?? (await deps.topups.find(row.id)) ?? row,
    isDefinitive: (e) => DEFINITIVE.has(e.code),
    refused: async (e) => {
      // The buyer paid and the wallet cannot take it: someone must refund the payment by hand.
      deps.log.error({ wallet_topup_id: row.id, code: e.code }, "a paid wallet top-up could not be credited");
      return (await deps.topups.fail(row.id, "completing", `${e.code}: ${e.message}`)) ?? row;
    },
    pendingMessage: "The ledger did not answer in time; the top-up completes shortly",
  });
}

/** The processor took the payment: completes the top-up (any number of times, one credit). Answers what happened. */
export async function completeTopup(deps: PaymentsDeps, row: TopupRow, payment: ProcessorPayment, amountPaid: number | null): Promise<string> {
  if (row.status === "completed") return `top-up ${row.id} already completed`;
  if (row.status === "failed") {
    deps.log.error({ wallet_topup_id: row.id }, "the processor reports a payment for a failed wallet top-up");
    return `top-up ${row.id} failed before the payment`;
  }
  if (amountPaid !== row.amount) {
    deps.log.error({ wallet_topup_id: row.id, amount_paid: amountPaid, amount: row.amount }, "the processor's amount differs from the wallet top-up");
    return `top-up ${row.id} not credited: paid ${String(amountPaid)}, expected ${row.amount}`;
  }
  const completing =
    row.status === "pending"
      ? ((await deps.topups.markCompleting(row.id, {
          ledger_reference: `wallet_topup:stripe:${payment.sessionId}`,
          processor_session_id: payment.sessionId,
          processing_fee: payment.fee,
          processor_payment_intent: payment.paymentIntent,
        })) ?? (await deps.topups.find(row.id)))
      : row;
  if (completing === undefined) throw new Error(`top-up ${row.id} vanished`);
  if (completing.status !== "completing") return `top-up ${row.id} is ${completing.status}`;
  const done = await driveTopup(deps, completing);
  return `top-up ${row.id} ${done.status}`;
}

/** The processor's checkout expired or its payment failed: a pending top-up fails (nothing was credited). */
export async function failPendingTopup(deps: PaymentsDeps, row: TopupRow, reason: string): Promise<string> {
  const failed = await deps.topups.fail(row.id, "pending", reason);
  return failed !== undefined ? `top-up ${row.id} failed` : `top-up ${row.id} is ${row.status}`;
}
