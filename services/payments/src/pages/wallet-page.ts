/**
 * The hosted wallet page (alt listener, authorised by the wallet session id in the path): balance and
 * activity as the session's permissions allow, and in sandbox a top-up form paid with the test cards.
 * Expired or revoked sessions are refused.
 */
import { randomUUID } from "node:crypto";
import { AMOUNT_MAX_CENTS, DomainError, PageRequest, type RpcReply } from "@treasury/contracts";
import type { LedgerWallet } from "../adapters/ledger.ts";
import { isUuid } from "../store/db.ts";
import { findWalletSessionForPage, type WalletSessionRow } from "../store/wallet-sessions.ts";
import type { PaymentsDeps } from "../usecases/deps.ts";
import { walletSessionStatus } from "../usecases/wallet-sessions.ts";
import { cardDigits, esc, page, redirect, TEST_CARD_DECLINE, TEST_CARD_SUCCESS, usd } from "./html.ts";

const ACTIVITY_ROWS_MAX = 20;
const SESSION_ID_RE = /^wals_[a-z0-9]{1,64}$/;

type Message = { kind: "error" | "ok"; text: string };

async function loadSession(deps: PaymentsDeps, payload: unknown): Promise<{ req: PageRequest; row: WalletSessionRow }> {
  const parsed = PageRequest.safeParse(payload);
  if (!parsed.success) throw new DomainError("validation_error", "Malformed page request");
  const id = parsed.data.params["session_id"] ?? "";
  const row = SESSION_ID_RE.test(id) ? await findWalletSessionForPage(deps.sql, id) : undefined;
  if (row === undefined) throw new DomainError("wallet_session_not_found", "This wallet session does not exist.");
  return { req: parsed.data, row };
}

function refused(row: WalletSessionRow, now: Date) {
  const status = walletSessionStatus(row, now);
  if (status === "active") return undefined;
  return page(410, "Wallet", `<h1>Wallet</h1><p class="error" id="state">This wallet session has ${status === "expired" ? "expired" : "been revoked"}. Return to the site to open a new one.</p>`);
}

function canTopUp(row: WalletSessionRow, wallet: LedgerWallet): boolean {
  return row.permissions.includes("top_up") && wallet.wallet_type === "consumer_credit" && wallet.topup_supported;
}

async function render(deps: PaymentsDeps, row: WalletSessionRow, message: Message | undefined, status = 200): Promise<RpcReply> {
  const scope = { orgId: row.org_id, livemode: row.livemode };
  const wallet = await deps.ledger.getWallet(scope, row.wallet_id);
  const parts: string[] = [`<h1>${wallet.wallet_type === "creator_earnings" ? "Creator earnings" : "Wallet"}</h1>`];
  if (message !== undefined) parts.push(`<p class="${message.kind}" role="alert" id="message">${esc(message.text)}</p>`);
  if (row.permissions.includes("view_balance")) {
    parts.push(
      `<div class="amount" id="balance">${esc(usd(wallet.balance))}</div>` +
        `<p class="muted">Available <span id="available">${esc(usd(wallet.available_balance))}</span> · Held <span id="held">${esc(usd(wallet.held_amount))}</span></p>`,
    );
  }
  if (row.permissions.includes("list_activity")) {
    const entries = await deps.ledger.listEntries(scope, row.wallet_id, ACTIVITY_ROWS_MAX);
    const rows = entries.map((e) => {
      const credit = e["entry_type"] === "credit";
      const amount = Number(e["amount"] ?? 0);
      return `<tr><td>${esc(String(e["created_at"] ?? "").slice(0, 10))}</td><td>${esc(e["description"] ?? e["transaction_type"] ?? "")}</td>` +
        `<td class="num">${credit ? "+" : "−"}${esc(usd(amount))}</td></tr>`;
    });
    parts.push(`<h2>Activity</h2>` + (rows.length === 0 ? `<p class="muted" id="activity">No activity yet.</p>` : `<table id="activity"><tbody>${rows.join("")}</tbody></table>`));
  }
  if (canTopUp(row, wallet)) {
    if (row.livemode) {
      parts.push(`<p class="muted">Add funds through the merchant's checkout.</p>`);
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
  if (row.success_url !== null) parts.push(`<p><a href="${esc(row.success_url)}" id="done">Done</a></p>`);
  if (row.cancel_url !== null) parts.push(`<p><a href="${esc(row.cancel_url)}" id="back">Back</a></p>`);
  return page(status, "Wallet", parts.join(""));
}

export async function walletPageHandler(deps: PaymentsDeps, payload: unknown): Promise<RpcReply> {
  const { req, row } = await loadSession(deps, payload);
  const gone = refused(row, deps.now());
  if (gone !== undefined) return gone;
  return render(deps, row, req.query["topup"] === "ok" ? { kind: "ok", text: "Funds added." } : undefined);
}

/** Dollars with at most two decimals → cents; undefined when malformed or out of range. */
export function parseDollars(input: string | undefined): number | undefined {
  const m = /^\s*\$?(\d{1,12})(?:\.(\d{1,2}))?\s*$/.exec(input ?? "");
  if (m === null) return undefined;
  const amount = Number(m[1]) * 100 + Number((m[2] ?? "0").padEnd(2, "0"));
  return amount > 0 && amount <= AMOUNT_MAX_CENTS ? amount : undefined;
}

export async function walletTopupHandler(deps: PaymentsDeps, payload: unknown): Promise<RpcReply> {
  const { req, row } = await loadSession(deps, payload);
  const gone = refused(row, deps.now());
  if (gone !== undefined) return gone;
  const scope = { orgId: row.org_id, livemode: row.livemode };
  const wallet = await deps.ledger.getWallet(scope, row.wallet_id);
  if (!canTopUp(row, wallet)) return render(deps, row, { kind: "error", text: "This session does not allow adding funds." }, 403);
  if (row.livemode) return render(deps, row, { kind: "error", text: "Test cards are not accepted for live wallets." }, 422);
  const amount = parseDollars(req.form["amount"]);
  if (amount === undefined) return render(deps, row, { kind: "error", text: "Enter an amount such as 10.00." }, 422);
  const nonce = req.form["nonce"] ?? "";
  if (!isUuid(nonce)) return render(deps, row, { kind: "error", text: "The form expired; please try again." }, 422);
  const card = cardDigits(req.form["card_number"]);
  if (card === TEST_CARD_DECLINE) return render(deps, row, { kind: "error", text: "Your card was declined. No funds were added." }, 422);
  if (card !== TEST_CARD_SUCCESS) return render(deps, row, { kind: "error", text: "Use a sandbox test card: 4242 4242 4242 4242." }, 422);
  try {
    // One form render, one top-up: the nonce makes a double submit a replay, never a second deposit.
    await deps.ledger.topUp(scope, row.wallet_id, amount, `wallet_session:${row.id}:${nonce}`, "Wallet top-up (sandbox card)");
  } catch (e) {
    if (!(e instanceof DomainError) || e.code !== "duplicate_reference_id") throw e;
  }
  return redirect(`${req.alt_base_url}/v1/wallet/${row.id}?topup=ok`);
}
