/**
 * The hosted wallet page (alt listener, authorised by the wallet session id in the path): balance and
 * activity as the session's permissions allow, in sandbox a top-up form paid with the test cards, and with
 * `request_refund` a form that asks for a refund of one of the wallet's purchases (a refund request the platform
 * then approves or rejects). Expired or revoked sessions are refused.
 */
import { randomUUID } from "node:crypto";
import { AMOUNT_MAX_CENTS, DomainError, type PageRequest, type RpcReply, type Tenant } from "@treasury/contracts";
import { isUuid } from "../domain/ids.ts";
import type { WalletSessionRow } from "../domain/records.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import type { LedgerWallet } from "../usecases/ports.ts";
import { startLiveTopup } from "../usecases/wallet-topup.ts";
import { walletSessionStatus } from "../usecases/wallet-sessions.ts";
import { cardDigits, esc, page, redirect, TEST_CARD_DECLINE, TEST_CARD_SUCCESS, usd } from "./html.ts";

const ACTIVITY_ROWS_MAX = 20;
/** Wallet entries read to find the purchases a buyer may ask a refund for (the ledger's page maximum). */
const PURCHASE_ENTRIES_MAX = 100;
const REFUND_REASON_CHARS_MAX = 1000;
/** The ledger kind of a checkout sale: a wallet-funded one debits the buyer's wallet. */
const CHECKOUT_SALE_KIND = "checkout_sale";
const SESSION_ID_RE = /^wals_[a-z0-9]{1,64}$/;

type Message = { kind: "error" | "ok"; text: string };

interface Purchase {
  saleReference: string;
  description: string;
  amount: number;
  date: string;
}

async function loadSession(deps: PaymentsDeps, req: PageRequest): Promise<WalletSessionRow> {
  const id = req.params["session_id"] ?? "";
  const row = SESSION_ID_RE.test(id) ? await deps.walletSessions.findForPage(id) : undefined;
  if (row === undefined) throw new DomainError("wallet_session_not_found", "This wallet session does not exist.");
  return row;
}

function refused(row: WalletSessionRow, now: Date) {
  const status = walletSessionStatus(row, now);
  if (status === "active") return undefined;
  return page(
    410,
    "Wallet",
    `<h1>Wallet</h1><p class="error" id="state">This wallet session has ${status === "expired" ? "expired" : "been revoked"}. Return to the site to open a new one.</p>`,
  );
}

function canTopUp(row: WalletSessionRow, wallet: LedgerWallet): boolean {
  return row.permissions.includes("top_up") && wallet.wallet_type === "consumer_credit" && wallet.topup_supported;
}

function canRequestRefund(row: WalletSessionRow, wallet: LedgerWallet): boolean {
  return row.permissions.includes("request_refund") && wallet.wallet_type === "consumer_credit";
}

/**
 * The wallet's purchases among its latest entries: checkout sales it paid, one per sale (a sale debits the wallet
 * once per part of its split). Read from the ledger on every use, so the form offers, and accepts, only sales
 * this wallet paid.
 */
async function purchasesOf(deps: PaymentsDeps, tenant: Tenant, walletId: string): Promise<Purchase[]> {
  const bySale = new Map<string, Purchase>();
  for (const e of await deps.ledger.listEntries(tenant, walletId, PURCHASE_ENTRIES_MAX)) {
    if (e["entry_type"] !== "debit" || e["transaction_type"] !== CHECKOUT_SALE_KIND || typeof e["reference_id"] !== "string") continue;
    const saleReference = e["reference_id"];
    const seen = bySale.get(saleReference);
    const amount = Number(e["amount"] ?? 0);
    if (seen !== undefined) seen.amount += amount;
    else bySale.set(saleReference, { saleReference, description: productOf(e["description"]), amount, date: String(e["created_at"] ?? "").slice(0, 10) });
  }
  return [...bySale.values()];
}

/** A checkout sale's description is `Checkout <id>: <product>`; the buyer recognises the product. */
function productOf(description: unknown): string {
  const text = typeof description === "string" ? description : "";
  const colon = text.indexOf(": ");
  return colon >= 0 ? text.slice(colon + 2) : "Purchase";
}

function refundForm(row: WalletSessionRow, purchases: Purchase[]): string {
  if (purchases.length === 0) return `<h2>Request a refund</h2><p class="muted" id="no-purchases">No purchases to refund.</p>`;
  const options = purchases
    .map((p) => `<option value="${esc(p.saleReference)}">${esc(p.date)} · ${esc(p.description)} · ${esc(usd(p.amount))}</option>`)
    .join("");
  return (
    `<h2>Request a refund</h2><form method="post" action="/v1/wallet/${esc(row.id)}/refund-request" id="refund-form">` +
    `<input type="hidden" name="nonce" value="${esc(randomUUID())}">` +
    `<label for="sale_reference">Purchase</label><select id="sale_reference" name="sale_reference" required>${options}</select>` +
    `<label for="refund_amount">Amount (USD, blank for all of it)</label><input id="refund_amount" name="amount" inputmode="decimal" placeholder="all">` +
    `<label for="refund_reason">Reason</label><input id="refund_reason" name="reason" maxlength="${REFUND_REASON_CHARS_MAX}" required>` +
    `<button type="submit" id="request-refund">Request refund</button></form>`
  );
}

async function render(deps: PaymentsDeps, row: WalletSessionRow, message: Message | undefined, status = 200): Promise<RpcReply> {
  const tenant = { orgId: row.org_id, livemode: row.livemode };
  const wallet = await deps.ledger.getWallet(tenant, row.wallet_id);
  const parts: string[] = [`<h1>${wallet.wallet_type === "creator_earnings" ? "Creator earnings" : "Wallet"}</h1>`];
  if (message !== undefined) parts.push(`<p class="${message.kind}" role="alert" id="message">${esc(message.text)}</p>`);
  if (row.permissions.includes("view_balance")) {
    parts.push(
      `<div class="amount" id="balance">${esc(usd(wallet.balance))}</div>` +
        `<p class="muted">Available <span id="available">${esc(usd(wallet.available_balance))}</span> · Held <span id="held">${esc(usd(wallet.held_amount))}</span></p>`,
    );
  }
  if (row.permissions.includes("list_activity")) {
    const entries = await deps.ledger.listEntries(tenant, row.wallet_id, ACTIVITY_ROWS_MAX);
    const rows = entries.map((e) => {
      const credit = e["entry_type"] === "credit";
      const amount = Number(e["amount"] ?? 0);
      return (
        `<tr><td>${esc(String(e["created_at"] ?? "").slice(0, 10))}</td><td>${esc(e["description"] ?? e["transaction_type"] ?? "")}</td>` +
        `<td class="num">${credit ? "+" : "−"}${esc(usd(amount))}</td></tr>`
      );
    });
    parts.push(
      `<h2>Activity</h2>` +
        (rows.length === 0 ? `<p class="muted" id="activity">No activity yet.</p>` : `<table id="activity"><tbody>${rows.join("")}</tbody></table>`),
    );
  }
  if (canTopUp(row, wallet)) {
    if (row.livemode) {
      parts.push(
        `<h2>Add funds</h2><p class="muted">You pay by card on the card processor's secure page.</p>` +
          `<form method="post" action="/v1/wallet/${esc(row.id)}/topup" id="topup-form">` +
          `<input type="hidden" name="nonce" value="${esc(randomUUID())}">` +
          `<label for="amount">Amount (USD)</label><input id="amount" name="amount" inputmode="decimal" required placeholder="10.00">` +
          `<button type="submit" id="topup">Continue to payment</button></form>`,
      );
    } else {
      parts.push(
        `<h2>Add funds</h2><p class="sandbox">Sandbox: 4242 4242 4242 4242 succeeds, 4000 0000 0000 0002 is declined.</p>` +
          `<form method="post" action="/v1/wallet/${esc(row.id)}/topup" id="topup-form">` +
          `<input type="hidden" name="nonce" value="${esc(randomUUID())}">` +
          `<label for="amount">Amount (USD)</label><input id="amount" name="amount" inputmode="decimal" required placeholder="10.00">` +
          `<label for="card_number">Card number</label><input id="card_number" name="card_number" inputmode="numeric" required maxlength="23">` +
          `<button type="submit" id="topup">Add funds</button></form>`,
      );
    }
  }
  if (canRequestRefund(row, wallet)) parts.push(refundForm(row, await purchasesOf(deps, tenant, row.wallet_id)));
  if (row.success_url !== null) parts.push(`<p><a href="${esc(row.success_url)}" id="done">Done</a></p>`);
  if (row.cancel_url !== null) parts.push(`<p><a href="${esc(row.cancel_url)}" id="back">Back</a></p>`);
  return page(status, "Wallet", parts.join(""));
}

export async function walletPageHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  const gone = refused(row, deps.now());
  if (gone !== undefined) return gone;
  return render(deps, row, pageMessage(req));
}

const REFUND_REQUEST_ID_RE = /^rr_[a-z0-9]{1,64}$/;

/** The message a redirect back to the page asks for (only fixed texts, and an id of a known shape). */
function pageMessage(req: PageRequest): Message | undefined {
  if (req.query["topup"] === "ok") return { kind: "ok", text: "Funds added." };
  const requested = req.query["refund_request"];
  if (typeof requested === "string" && REFUND_REQUEST_ID_RE.test(requested))
    return { kind: "ok", text: `Refund requested (${requested}). The merchant will review it.` };
  return undefined;
}

/** Why the refunds service refused a request, in words for the buyer. */
function refusalText(e: DomainError): string {
  if (e.code === "service_timeout" || e.code === "service_unavailable") return "The request could not be sent just now; please try again.";
  if (e.code === "validation_error") return "Check the amount and the reason, then try again.";
  return "The refund request could not be made.";
}

/**
 * The refund-request form: the session (not the browser) names the org, environment, wallet and buyer; the
 * purchase must be one this wallet paid. One form render makes at most one request: its nonce is the
 * idempotency key, so a double submit answers the same request.
 */
export async function walletRefundRequestHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  const gone = refused(row, deps.now());
  if (gone !== undefined) return gone;
  const tenant = { orgId: row.org_id, livemode: row.livemode };
  const wallet = await deps.ledger.getWallet(tenant, row.wallet_id);
  if (!canRequestRefund(row, wallet)) return render(deps, row, { kind: "error", text: "This session does not allow refund requests." }, 403);
  const nonce = req.form["nonce"] ?? "";
  if (!isUuid(nonce)) return render(deps, row, { kind: "error", text: "The form expired; please try again." }, 422);
  const purchase = (await purchasesOf(deps, tenant, row.wallet_id)).find((p) => p.saleReference === req.form["sale_reference"]);
  if (purchase === undefined) return render(deps, row, { kind: "error", text: "Choose one of your purchases." }, 422);
  const amountText = (req.form["amount"] ?? "").trim();
  const amount = amountText === "" ? undefined : parseDollars(amountText);
  if (amount === undefined && amountText !== "") return render(deps, row, { kind: "error", text: "Enter an amount such as 10.00, or leave it blank." }, 422);
  if (amount !== undefined && amount > purchase.amount)
    return render(deps, row, { kind: "error", text: `The amount is more than the purchase (${usd(purchase.amount)}).` }, 422);
  const reason = (req.form["reason"] ?? "").trim();
  if (reason === "" || reason.length > REFUND_REASON_CHARS_MAX) return render(deps, row, { kind: "error", text: "Say why you want a refund." }, 422);
  let created: Record<string, unknown>;
  try {
    created = await deps.refunds.createRefundRequest(tenant, {
      sale_reference: purchase.saleReference,
      ...(wallet.owner_id !== "" ? { customer_id: wallet.owner_id } : {}),
      ...(row.customer_email !== null ? { customer_email: row.customer_email } : {}),
      ...(amount !== undefined ? { amount } : {}),
      reason,
      idempotency_key: `wallet_session:${row.id}:${nonce}`,
      metadata: { source: "wallet_page", wallet_session_id: row.id, wallet_id: row.wallet_id },
    });
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    return render(deps, row, { kind: "error", text: refusalText(e) }, e.code === "service_timeout" || e.code === "service_unavailable" ? 503 : 422);
  }
  return redirect(`${req.alt_base_url}/v1/wallet/${row.id}?refund_request=${encodeURIComponent(String(created["id"]))}`);
}

/** A live top-up is paid on the card processor's checkout page; its completion credits the wallet. */
async function liveTopup(deps: PaymentsDeps, req: PageRequest, row: WalletSessionRow, amount: number, nonce: string): Promise<RpcReply> {
  try {
    return redirect(await startLiveTopup(deps, row, amount, nonce, `${req.alt_base_url}/v1/wallet/${row.id}`));
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    const text =
      e.code === "provider_not_configured" ? "Card payments are not available for this wallet yet." : "The card processor did not answer; please try again.";
    return render(deps, row, { kind: "error", text }, e.code === "provider_not_configured" ? 422 : 503);
  }
}

/** Dollars with at most two decimals → cents; undefined when malformed or out of range. */
export function parseDollars(input: string | undefined): number | undefined {
  const m = /^\s*\$?(\d{1,12})(?:\.(\d{1,2}))?\s*$/.exec(input ?? "");
  if (m === null) return undefined;
  const amount = Number(m[1]) * 100 + Number((m[2] ?? "0").padEnd(2, "0"));
  return amount > 0 && amount <= AMOUNT_MAX_CENTS ? amount : undefined;
}

export async function walletTopupHandler(deps: PaymentsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadSession(deps, req);
  const gone = refused(row, deps.now());
  if (gone !== undefined) return gone;
  const tenant = { orgId: row.org_id, livemode: row.livemode };
  const wallet = await deps.ledger.getWallet(tenant, row.wallet_id);
  if (!canTopUp(row, wallet)) return render(deps, row, { kind: "error", text: "This session does not allow adding funds." }, 403);
  const amount = parseDollars(req.form["amount"]);
  if (amount === undefined) return render(deps, row, { kind: "error", text: "Enter an amount such as 10.00." }, 422);
  const nonce = req.form["nonce"] ?? "";
  if (!isUuid(nonce)) return render(deps, row, { kind: "error", text: "The form expired; please try again." }, 422);
  if (row.livemode) return liveTopup(deps, req, row, amount, nonce);
  const card = cardDigits(req.form["card_number"]);
  if (card === TEST_CARD_DECLINE) return render(deps, row, { kind: "error", text: "Your card was declined. No funds were added." }, 422);
  if (card !== TEST_CARD_SUCCESS) return render(deps, row, { kind: "error", text: "Use a sandbox test card: 4242 4242 4242 4242." }, 422);
  try {
    // One form render, one top-up: the nonce makes a double submit a replay, never a second deposit.
    await deps.ledger.topUp(tenant, row.wallet_id, amount, `wallet_session:${row.id}:${nonce}`, "Wallet top-up (sandbox card)");
  } catch (e) {
    if (!(e instanceof DomainError) || e.code !== "duplicate_reference_id") throw e;
  }
  return redirect(`${req.alt_base_url}/v1/wallet/${row.id}?topup=ok`);
}
