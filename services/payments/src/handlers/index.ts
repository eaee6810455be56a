/** RPC handlers of payments: decode with the shared contracts → use case → named-key body. */
import { DomainError, parseOrThrow, RpcRequest, schemas, type RpcReply } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import type { z } from "zod";
import { checkoutCancelHandler, checkoutPageHandler, checkoutPayHandler } from "../pages/checkout-page.ts";
import { walletPageHandler, walletRefundRequestHandler, walletTopupHandler } from "../pages/wallet-page.ts";
import { completeCheckout } from "../usecases/complete-checkout.ts";
import { createCheckoutSession } from "../usecases/create-checkout.ts";
import { scopeOfAuth, type PaymentsDeps } from "../usecases/deps.ts";
import { failCheckout } from "../usecases/fail-checkout.ts";
import { presentCheckout } from "../usecases/present.ts";
import { receiveStripeWebhook, type WebhookSecrets } from "../usecases/receive-processor-event.ts";
import { reverseSharedWalletSpend, spendSharedWallet } from "../usecases/shared-spend.ts";
import { createWalletSession } from "../usecases/wallet-sessions.ts";

type Req = z.infer<typeof RpcRequest>;
type Handler = (req: Req) => Promise<{ status?: number; body: Record<string, unknown> }>;

function decode<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  return parseOrThrow(schema, value);
}

function param(params: Record<string, string>, name: string): string {
  const v = params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}

function sandboxOnly(req: Req): void {
  if (req.auth.livemode) {
    throw new DomainError("sandbox_only", "Sandbox checkout actions need a test key (slk_test_…)", {
      hint: "Live checkouts complete when the buyer pays on checkout_url",
    });
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function checkoutId(req: Req): string {
  const id = param(req.params, "checkout_id");
  if (!UUID_RE.test(id)) throw new DomainError("checkout_session_not_found", `Checkout session ${id} not found`);
  return id.toLowerCase();
}

function altBase(req: Req): string {
  const base = req.alt_base_url;
  if (base === undefined || base === "") throw new Error("the gateway sent no alt_base_url");
  return base.replace(/\/+$/, "");
}

export function registerHandlers(svc: Pick<Service, "rpc">, deps: PaymentsDeps, webhookSecrets: WebhookSecrets): void {
  const ops: Record<string, Handler> = {
    // No API key: the body's signature authenticates it, and the event (not a key) names the org it concerns.
    receiveStripeWebhook: (req) => receiveStripeWebhook(deps, webhookSecrets, decode(schemas.ProcessorWebhookBody, req.body)),
    createCheckoutSession: (req) => createCheckoutSession(deps, scopeOfAuth(req.auth), decode(schemas.CreateCheckoutBody, req.body), altBase(req)),
    sandboxCompleteCheckout: async (req) => {
      sandboxOnly(req);
      const body = decode(schemas.SandboxCheckoutActionBody, req.body);
      const row = await completeCheckout(deps, scopeOfAuth(req.auth), checkoutId(req), { source: "sandbox_api", sandboxIdempotencyKey: body.idempotency_key });
      return { body: { checkout_session: presentCheckout(row, deps.now()) } };
    },
    sandboxFailCheckout: async (req) => {
      sandboxOnly(req);
      const body = decode(schemas.SandboxCheckoutActionBody, req.body);
      const row = await failCheckout(deps, scopeOfAuth(req.auth), checkoutId(req), body.reason);
      return { body: { checkout_session: presentCheckout(row, deps.now()) } };
    },
    createWalletSession: (req) => createWalletSession(deps, scopeOfAuth(req.auth), decode(schemas.CreateWalletSessionBody, req.body), altBase(req)),
    spendSharedWallet: (req) => spendSharedWallet(deps, scopeOfAuth(req.auth), decode(schemas.SharedSpendBody, req.body)),
    reverseSharedWalletSpend: (req) => reverseSharedWalletSpend(deps, scopeOfAuth(req.auth), req.auth, decode(schemas.SharedSpendReverseBody, req.body)),
  };
  // Raw registration: the kit's typed handler drops RpcRequest.alt_base_url, which checkout_url and wallet_url need.
  for (const [operation, handler] of Object.entries(ops)) {
    svc.rpc.handleRaw(operation, async (payload, ctx): Promise<RpcReply | never> => {
      const parsed = RpcRequest.safeParse(payload);
      if (!parsed.success) throw new DomainError("validation_error", "Malformed RPC request");
      const req = parsed.data;
      if (req.deadline !== undefined && Date.now() > req.deadline) {
        ctx.log.warn({ deadline: req.deadline }, "request past its deadline");
        throw new DomainError("service_timeout", "The request arrived after its deadline");
      }
      const res = await handler(req);
      return { ok: true, status: res.status ?? 200, body: res.body };
    });
  }
  const pages: Record<string, (payload: unknown) => Promise<RpcReply>> = {
    "page.checkout": (p) => checkoutPageHandler(deps, p),
    "page.checkoutPay": (p) => checkoutPayHandler(deps, p),
    "page.checkoutCancel": (p) => checkoutCancelHandler(deps, p),
    "page.wallet": (p) => walletPageHandler(deps, p),
    "page.walletTopup": (p) => walletTopupHandler(deps, p),
    "page.walletRefundRequest": (p) => walletRefundRequestHandler(deps, p),
  };
  for (const [operation, handler] of Object.entries(pages)) svc.rpc.handleRaw(operation, (payload) => handler(payload));
}
