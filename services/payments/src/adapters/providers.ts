/**
 * Checkout providers behind one interface. `soledgic` is the built-in hosted page and, in sandbox, its card
 * simulator; `stripe` creates a Stripe Checkout session through Stripe's HTTP API when a secret key is
 * configured, and otherwise answers provider_not_configured before anything is written.
 */
import { DomainError } from "@treasury/contracts";

export type ProviderName = "soledgic" | "stripe";

export interface HostedSessionInput {
  sessionId: string;
  amount: number;
  currency: string;
  productName: string;
  successUrl: string;
  cancelUrl: string;
  hostedUrl: string;
  livemode: boolean;
}

export interface CheckoutProvider {
  name: ProviderName;
  /** Throws provider_not_configured when the provider cannot be used in this deployment. */
  assertConfigured(): void;
  /** Where the buyer pays, and the provider's payment id (null when the id comes at completion). */
  createHostedSession(input: HostedSessionInput): Promise<{ checkoutUrl: string; paymentId: string | null }>;
}

const STRIPE_TIMEOUT_MS = 10_000;

export const soledgicProvider: CheckoutProvider = {
  name: "soledgic",
  assertConfigured: () => {},
  createHostedSession: async (input) => ({ checkoutUrl: input.hostedUrl, paymentId: null }),
};

export function stripeProvider(opts: { secretKey: string | undefined; apiBase: string }): CheckoutProvider {
  return {
    name: "stripe",
    assertConfigured: () => {
      if (opts.secretKey === undefined) {
        throw new DomainError("provider_not_configured", "The stripe checkout provider has no credentials configured", {
          hint: "POST /v1/checkout-sessions with sandbox_checkout_provider: \"soledgic\" (the built-in simulator), or configure STRIPE_SECRET_KEY on the payments service",
        });
      }
    },
    createHostedSession: async (input) => {
      const form = new URLSearchParams({
        mode: "payment",
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        client_reference_id: input.sessionId,
        "line_items[0][quantity]": "1",
        "line_items[0][price_data][currency]": input.currency.toLowerCase(),
        "line_items[0][price_data][unit_amount]": String(input.amount),
        "line_items[0][price_data][product_data][name]": input.productName,
        "metadata[checkout_session_id]": input.sessionId,
      });
      const res = await fetch(`${opts.apiBase}/v1/checkout/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${opts.secretKey ?? ""}`, "content-type": "application/x-www-form-urlencoded", "idempotency-key": `cs_${input.sessionId}` },
        body: form,
        signal: AbortSignal.timeout(STRIPE_TIMEOUT_MS),
      });
      const body = (await res.json().catch(() => ({}))) as { id?: string; url?: string; error?: { message?: string } };
      if (!res.ok || typeof body.url !== "string" || typeof body.id !== "string") {
        throw new DomainError("provider_not_configured", `Stripe refused the checkout session: ${body.error?.message ?? res.status}`, {
          hint: "Check STRIPE_SECRET_KEY on the payments service, or use sandbox_checkout_provider: \"soledgic\"",
        });
      }
      return { checkoutUrl: body.url, paymentId: body.id };
    },
  };
}

export type Providers = Record<ProviderName, CheckoutProvider>;
