/**
 * Checkout providers behind one interface. `soledgic` is the built-in hosted page and, in sandbox, its card
 * simulator; `stripe` creates a Stripe Checkout session through the processor client (adapters/stripe.ts) when a
 * secret key is configured, and otherwise answers provider_not_configured before anything is written. A
 * session's completion comes back as the processor's `checkout.session.completed` event (usecases/processor-events.ts).
 */
import { DomainError } from "@treasury/contracts";
import { ProcessorRefused, type CheckoutProvider, type ProcessorClient } from "../usecases/ports.ts";

export type { HostedSessionInput } from "../usecases/ports.ts";

export const soledgicProvider: CheckoutProvider = {
  name: "soledgic",
  assertConfigured: () => {},
  createHostedSession: async (input) => ({ checkoutUrl: input.hostedUrl, paymentId: null }),
};

function notConfigured(): DomainError {
  return new DomainError("provider_not_configured", "The stripe checkout provider has no credentials configured", {
    hint: 'POST /v1/checkout-sessions with sandbox_checkout_provider: "soledgic" (the built-in simulator), or configure STRIPE_SECRET_KEY on the payments service',
  });
}

/** A live-mode processor key (secret or restricted): it moves real money. */
export function isLiveProcessorKey(secretKey: string): boolean {
  return /^(sk|rk)_live_/.test(secretKey);
}

/**
 * The processor key's mode must be the payment's environment, both ways. A sandbox checkout never uses a live-mode
 * key: a sandbox buyer sent to a real checkout page could pay real money into a test sale. A live checkout never
 * uses a test-mode key: the processor's test cards would pay it, and a test payment would credit live money.
 */
function assertKeyMode(livemode: boolean, liveAccount: boolean): void {
  if (!livemode && liveAccount) {
    throw new DomainError("provider_not_configured", "Sandbox checkouts never use the live card processor account", {
      hint: 'POST /v1/checkout-sessions with sandbox_checkout_provider: "soledgic" (the built-in simulator); stripe in sandbox needs a test-mode STRIPE_SECRET_KEY',
    });
  }
  if (livemode && !liveAccount) {
    throw new DomainError("provider_not_configured", "Live card payments need a live-mode card processor key; this deployment's key is a test-mode one", {
      hint: "Configure a live-mode STRIPE_SECRET_KEY (sk_live_… or rk_live_…) on the payments service, or use a sandbox key (slk_test_…)",
    });
  }
}

/** `liveAccount`: the deployment's processor key is a live-mode one (isLiveProcessorKey). */
export function stripeProvider(client: ProcessorClient | undefined, opts: { liveAccount: boolean }): CheckoutProvider {
  return {
    name: "stripe",
    assertConfigured: (livemode) => {
      if (client === undefined) throw notConfigured();
      assertKeyMode(livemode, opts.liveAccount);
    },
    createHostedSession: async (input) => {
      if (client === undefined) throw notConfigured();
      assertKeyMode(input.livemode, opts.liveAccount);
      try {
        const s = await client.createCheckoutSession({
          reference: input.sessionId,
          amount: input.amount,
          currency: input.currency,
          productName: input.productName,
          successUrl: input.successUrl,
          cancelUrl: input.cancelUrl,
          expiresAt: input.expiresAt,
          metadata: input.metadata,
        });
        return { checkoutUrl: s.url, paymentId: s.id };
      } catch (e) {
        if (e instanceof ProcessorRefused) {
          throw new DomainError("provider_not_configured", `Stripe refused the checkout session: ${e.message}`, {
            hint: 'Check STRIPE_SECRET_KEY on the payments service, or use sandbox_checkout_provider: "soledgic"',
          });
        }
        throw new DomainError("service_unavailable", "The card processor did not answer; retry with the same idempotency_key");
      }
    },
  };
}
