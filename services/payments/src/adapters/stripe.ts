/**
 * The card processor's API through its official client (`stripe`): hosted checkout sessions, the fee of a payment
 * (its balance transaction), refunds. Every call has a timeout and is retried by the client on network errors and
 * 5xx/429 answers with the same idempotency key, so a retry never makes a second session or refund. Errors leave
 * here as one of two kinds: ProcessorRefused (the processor said no for good: retrying the same request cannot
 * succeed) or ProcessorUnavailable (no answer, an error on its side, our credentials refused: the outcome is
 * unknown and the same request is sent again later). Neither carries the secret key or the raw response, so what
 * is logged from them is safe.
 */
import Stripe from "stripe";
import { refundStatusOf } from "../domain/processor-refund.ts";
import { ProcessorRefused, ProcessorUnavailable, type ProcessorClient, type ProcessorRefund } from "../usecases/ports.ts";

/** The two kinds of error a processor call ends with (declared with the port). */
export { ProcessorRefused, ProcessorUnavailable };

export interface StripeClientOptions {
  secretKey: string;
  apiBase: string;
  timeoutMs: number;
  maxNetworkRetries: number;
}

function idOf(v: string | { id: string } | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  return typeof v === "string" ? v : v.id;
}

export function presentRefund(r: Stripe.Refund): ProcessorRefund {
  return {
    id: r.id,
    status: refundStatusOf(r.status),
    failureReason: r.failure_reason ?? null,
    paymentIntentId: idOf(r.payment_intent),
    metadata: (r.metadata ?? {}) as Record<string, string>,
  };
}

/** The fee of a charge whose balance transaction is expanded; undefined when it is only an id (or absent). */
export function feeOfCharge(charge: string | Stripe.Charge | null | undefined): number | undefined {
  if (charge === null || charge === undefined || typeof charge === "string") return undefined;
  const bt = charge.balance_transaction;
  if (bt === null || typeof bt === "string") return undefined;
  return bt.fee;
}

/** Maps a client error to one of our two kinds, keeping only what is safe to log (never headers or raw bodies). */
export function classify(e: unknown): ProcessorRefused | ProcessorUnavailable {
  if (e instanceof Stripe.errors.StripeError) {
    const what = `${e.type}${e.statusCode !== undefined ? ` ${e.statusCode}` : ""}${e.code !== undefined ? ` ${e.code}` : ""}: ${e.message}`;
    const definitive =
      e instanceof Stripe.errors.StripeCardError ||
      e instanceof Stripe.errors.StripeIdempotencyError ||
      (e instanceof Stripe.errors.StripeInvalidRequestError && e.statusCode !== 409 && e.statusCode !== 429);
    return definitive ? new ProcessorRefused(what, e.code ?? null) : new ProcessorUnavailable(what);
  }
  return new ProcessorUnavailable(e instanceof Error ? e.message : String(e));
}

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof ProcessorRefused || e instanceof ProcessorUnavailable) throw e;
    throw classify(e);
  }
}

export function stripeClient(opts: StripeClientOptions): ProcessorClient {
  const base = new URL(opts.apiBase);
  const stripe = new Stripe(opts.secretKey, {
    host: base.hostname,
    ...(base.port !== "" ? { port: base.port } : {}),
    protocol: base.protocol === "http:" ? "http" : "https",
    timeout: opts.timeoutMs,
    maxNetworkRetries: opts.maxNetworkRetries,
    telemetry: false,
  });
  return {
    createCheckoutSession: (input) =>
      call(async () => {
        const s = await stripe.checkout.sessions.create(
          {
            mode: "payment",
            success_url: input.successUrl,
            cancel_url: input.cancelUrl,
            client_reference_id: input.reference,
            expires_at: Math.floor(input.expiresAt.getTime() / 1000),
            line_items: [
              { quantity: 1, price_data: { currency: input.currency.toLowerCase(), unit_amount: input.amount, product_data: { name: input.productName } } },
            ],
            metadata: input.metadata,
            payment_intent_data: { metadata: input.metadata },
          },
          { idempotencyKey: `cs_${input.reference}` },
        );
        if (typeof s.url !== "string") throw new ProcessorRefused("the processor answered a checkout session without a url", null);
        return { id: s.id, url: s.url };
      }),
    paymentFacts: (paymentIntentId) =>
      call(async () => {
        const pi = await stripe.paymentIntents.retrieve(paymentIntentId, { expand: ["latest_charge.balance_transaction"] });
        const fee = feeOfCharge(pi.latest_charge);
        if (fee === undefined) throw new ProcessorUnavailable(`payment ${paymentIntentId} has no settled balance transaction yet`);
        return { paymentIntentId: pi.id, chargeId: idOf(pi.latest_charge), fee };
      }),
    createRefund: (input) =>
      call(async () =>
        presentRefund(
          await stripe.refunds.create(
            { payment_intent: input.paymentIntentId, amount: input.amount, metadata: input.metadata },
            { idempotencyKey: input.refundId },
          ),
        ),
      ),
    retrieveRefund: (id) => call(async () => presentRefund(await stripe.refunds.retrieve(id))),
    retrieveCheckoutSession: (id) => call(async () => stripe.checkout.sessions.retrieve(id, { expand: ["payment_intent.latest_charge.balance_transaction"] })),
  };
}
