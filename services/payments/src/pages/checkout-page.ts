/**
 * The hosted checkout page (alt listener, authorised by the session id in the path, never an API key):
 * merchant, product and amount; in sandbox a card form that pays through the same completion use case as the
 * API; the decline card shows a message and moves nothing; cancel returns to cancel_url.
 */
import { DomainError, type PageRequest, type RpcReply } from "@treasury/contracts";
import { isUuid } from "../domain/ids.ts";
import type { CheckoutRow } from "../domain/records.ts";
import { completeCheckout } from "../usecases/complete-checkout.ts";
import { withSessionId } from "../usecases/create-checkout.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { publicStatus } from "../usecases/present.ts";
import { cardDigits, esc, page, redirect, TEST_CARD_DECLINE, TEST_CARD_SUCCESS, usd } from "./html.ts";

async function loadSession(deps: PaymentsDeps, req: PageRequest): Promise<CheckoutRow> {
  const id = req.params["checkout_id"] ?? "";
  const row = isUuid(id) ? await deps.checkouts.findForPage(id) : undefined;
  if (row === undefined) throw new DomainError("checkout_session_not_found", "This checkout session does not exist.");
  return row;
}

function header(row: CheckoutRow): string {
  return (
    `<p class="muted">Pay <span id="merchant">${esc(row.merchant_name)}</span></p>` +
    `<h1 id="product">${esc(row.product_name ?? row.product_id ?? "Purchase")}</h1>` +
    `<div class="amount" id="amount">${esc(usd(row.amount))} <span class="muted">${esc(row.currency)}</span></div>`
  );
}

function stateBody(row: CheckoutRow, now: Date): { status: number; html: string } | undefined {
  const state = publicStatus(row, now);
  if (state === "completed") return { status: 200, html: `<p class="ok" id="state">Payment complete. Thank you!</p>` };
  if (state === "failed") return { status: 409, html: `<p class="error" id="state">This checkout failed and can no longer be paid.</p>` };
  if (state === "expired")
    return { status: 410, html: `<p class="error" id="state">This checkout session has expired. Return to the merchant to start again.</p>` };
  if (row.status === "completing") return { status: 200, html: `<p class="ok" id="state">Your payment is being processed.</p>` };
  return undefined;
}

function checkoutPage(row: CheckoutRow, now: Date, message?: { kind: "error" | "ok"; text: string }, status = 200) {
  const state = stateBody(row, now);
  const title = `Checkout · ${row.merchant_name}`;
  if (state !== undefined) return page(state.status, title, header(row) + state.html);
  const alert = message === undefined ? "" : `<p class="${message.kind}" role="alert" id="message">${esc(message.text)}</p>`;
  const base = `/v1/checkout/${encodeURIComponent(row.id)}`;
  const form =
    row.provider !== "soledgic" && row.checkout_url !== null
      ? `<p><a href="${esc(row.checkout_url)}" id="provider-link">Continue to payment</a></p>`
      : row.livemode
        ? `<p class="muted" id="live-note">Card payments for this checkout are processed by the merchant's payment processor.</p>`
        : `<p class="sandbox">Sandbox: pay with 4242 4242 4242 4242 (succeeds) or 4000 0000 0000 0002 (declined). No real money moves.</p>` +
          `<form method="post" action="${esc(base)}/pay" id="pay-form">` +
          `<label for="card_number">Card number</label><input id="card_number" name="card_number" inputmode="numeric" autocomplete="cc-number" required maxlength="23">` +
          `<label for="exp">Expiry (MM/YY)</label><input id="exp" name="exp" autocomplete="cc-exp" maxlength="7">` +
          `<label for="cvc">CVC</label><input id="cvc" name="cvc" autocomplete="cc-csc" maxlength="4">` +
          `<button type="submit" id="pay">Pay ${esc(usd(row.amount))}</button></form>`;
  const cancel = `<form method="post" action="${esc(base)}/cancel"><button type="submit" class="secondary" id="cancel">Cancel</button></form>`;
  return page(status, title, header(row) + alert + form + cancel);
}

export function successUrlFor(row: CheckoutRow): string | undefined {
  return row.success_url === null ? undefined : withSessionId(row.success_url, row.id);
}

export async function checkoutPageHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  return checkoutPage(row, deps.now());
}

export async function checkoutPayHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  const now = deps.now();
  if (stateBody(row, now) !== undefined) return checkoutPage(row, now);
  if (row.livemode || row.provider !== "soledgic") return checkoutPage(row, now, { kind: "error", text: "This checkout does not take test cards here." }, 422);
  const card = cardDigits(req.form["card_number"]);
  if (card === TEST_CARD_DECLINE) return checkoutPage(row, now, { kind: "error", text: "Your card was declined. No payment was taken." }, 422);
  if (card !== TEST_CARD_SUCCESS) return checkoutPage(row, now, { kind: "error", text: "Use a sandbox test card: 4242 4242 4242 4242." }, 422);
  let done: CheckoutRow;
  try {
    done = await completeCheckout(deps, { orgId: row.org_id, livemode: row.livemode }, row.id, { source: "hosted_page" });
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    const fresh = (await deps.checkouts.findForPage(row.id)) ?? row;
    return checkoutPage(fresh, deps.now(), { kind: "error", text: e.code === "service_timeout" ? "Your payment is being processed." : e.message }, 422);
  }
  const target = successUrlFor(done);
  if (target !== undefined) return redirect(target);
  return page(200, `Paid · ${done.merchant_name}`, header(done) + `<p class="ok" id="state">Payment complete. Thank you!</p>`);
}

export async function checkoutCancelHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  if (row.cancel_url !== null) return redirect(row.cancel_url);
  return page(200, `Cancelled · ${row.merchant_name}`, header(row) + `<p class="muted" id="state">Checkout cancelled. You have not been charged.</p>`);
}
