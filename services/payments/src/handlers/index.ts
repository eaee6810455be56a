/** RPC handlers of payments: decode with the shared contracts → use case → named-key body. */
import { DomainError, parseOrThrow, schemas, tenantOf, type RpcReply, type RpcRequest } from "@treasury/contracts";
import type { InternalCtx, RpcHandler, Service } from "@treasury/service-kit";
import type { PageRequest } from "@treasury/contracts";
import { checkoutCancelHandler, checkoutPageHandler, checkoutPayHandler } from "../pages/checkout-page.ts";
import { walletPageHandler, walletRefundRequestHandler, walletTopupHandler } from "../pages/wallet-page.ts";
import { isUuid } from "../domain/ids.ts";
import { completeCheckoutReplay } from "../usecases/complete-checkout.ts";
import { createCheckoutSession } from "../usecases/create-checkout.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { failCheckout } from "../usecases/fail-checkout.ts";
import { presentCheckout } from "../usecases/present.ts";
import { receiveStripeWebhook, type WebhookSecrets } from "../usecases/receive-processor-event.ts";
import { reverseSharedWalletSpend, spendSharedWallet } from "../usecases/shared-spend.ts";
import { createWalletSession } from "../usecases/wallet-sessions.ts";

function param(params: Record<string, string>, name: string): string {
  const v = params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}

function sandboxOnly(req: RpcRequest): void {
  if (req.auth.livemode) {
    throw new DomainError("sandbox_only", "Sandbox checkout actions need a test key (slk_test_…)", {
      hint: "Live checkouts complete when the buyer pays on checkout_url",
    });
  }
}

function checkoutId(req: RpcRequest): string {
  const id = param(req.params, "checkout_id");
  if (!isUuid(id)) throw new DomainError("checkout_session_not_found", `Checkout session ${id} not found`);
  return id.toLowerCase();
}

function altBase(req: RpcRequest): string {
  const base = req.alt_base_url;
  if (base === undefined || base === "") throw new Error("the gateway sent no alt_base_url");
  return base.replace(/\/+$/, "");
}

export function registerHandlers(svc: Pick<Service, "handle" | "handlePage">, deps: PaymentsDeps, webhookSecrets: WebhookSecrets): void {
  const ops: Record<string, RpcHandler> = {
    // No API key: the body's signature authenticates it, and the event (not a key) names the org it concerns.
    receiveStripeWebhook: async (req) => {
      const { eventId, duplicate, handled } = await receiveStripeWebhook(deps, webhookSecrets, parseOrThrow(schemas.ProcessorWebhookBody, req.body));
      return { status: 200, body: { received: true, event_id: eventId, duplicate, handled } };
    },
    createCheckoutSession: async (req) => {
      const body = parseOrThrow(schemas.CreateCheckoutBody, req.body);
      const { checkoutSession, replayed } = await createCheckoutSession(deps, tenantOf(req.auth), body, altBase(req), req.client_ip);
      return replayed
        ? { status: 200, body: { checkout_session: checkoutSession, idempotent: true } }
        : { status: 201, body: { checkout_session: checkoutSession } };
    },
    sandboxCompleteCheckout: async (req) => {
      sandboxOnly(req);
      const body = parseOrThrow(schemas.SandboxCheckoutActionBody, req.body);
      const input = { source: "sandbox_api" as const, sandboxIdempotencyKey: body.idempotency_key };
      const { checkout, replayed } = await completeCheckoutReplay(deps, tenantOf(req.auth), checkoutId(req), input);
      return { body: { checkout_session: presentCheckout(checkout, deps.now()), ...(replayed ? { idempotent: true } : {}) } };
    },
    sandboxFailCheckout: async (req) => {
      sandboxOnly(req);
      const body = parseOrThrow(schemas.SandboxCheckoutActionBody, req.body);
      const row = await failCheckout(deps, tenantOf(req.auth), checkoutId(req), body.reason);
      return { body: { checkout_session: presentCheckout(row, deps.now()) } };
    },
    createWalletSession: async (req) => {
      const body = parseOrThrow(schemas.CreateWalletSessionBody, req.body);
      const { walletSession, replayed } = await createWalletSession(deps, tenantOf(req.auth), body, altBase(req));
      return replayed ? { status: 200, body: { wallet_session: walletSession, idempotent: true } } : { status: 201, body: { wallet_session: walletSession } };
    },
    spendSharedWallet: async (req) => {
      const spend = await spendSharedWallet(deps, tenantOf(req.auth), parseOrThrow(schemas.SharedSpendBody, req.body));
      return { status: 201, body: { spend } };
    },
    reverseSharedWalletSpend: async (req) => {
      const reversal = await reverseSharedWalletSpend(deps, tenantOf(req.auth), req.auth, parseOrThrow(schemas.SharedSpendReverseBody, req.body));
      return { status: 200, body: { reversal } };
    },
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
  const pages: Record<string, (req: PageRequest, ctx: InternalCtx) => Promise<RpcReply>> = {
    "page.checkout": (p) => checkoutPageHandler(deps, p),
    "page.checkoutPay": (p) => checkoutPayHandler(deps, p),
    "page.checkoutCancel": (p) => checkoutCancelHandler(deps, p),
    "page.wallet": (p) => walletPageHandler(deps, p),
    "page.walletTopup": (p) => walletTopupHandler(deps, p),
    "page.walletRefundRequest": (p) => walletRefundRequestHandler(deps, p),
  };
  for (const [operation, handler] of Object.entries(pages)) svc.handlePage(operation, handler);
}
