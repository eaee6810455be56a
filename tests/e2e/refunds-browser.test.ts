// Proves the hosted wallet page's refund-request form in a real headless browser: a buyer session with
// `request_refund` asks for a refund of one of its wallet's purchases, the request reaches the refunds service
// with the session's org, environment and buyer (not the browser's), approving it puts the money back in the
// wallet; without the permission there is no form and a forged post is refused; a sale the wallet did not pay
// cannot be named.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BrowserContext } from "playwright-core";
import { launchChromium, type Browser } from "./browser.ts";
import { call, startStack, type Stack } from "./stack.ts";

let s: Stack;
let browser: Browser | undefined;
let context: BrowserContext;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments", "refunds"] });
  browser = await launchChromium("refunds-browser");
  context = browser.context;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

type Body = Record<string, unknown>;
const api = (method: string, path: string, body?: unknown) => call(s.baseUrl, method, path, { key: s.testKey, ...(body === undefined ? {} : { body }) });

let seq = 0;
/** A buyer whose wallet paid a wallet-funded checkout of `amount`: the wallet, the sale, and the creator. */
async function buyerWithPurchase(amount: number): Promise<{ owner: string; walletId: string; saleReference: string; creator: string }> {
  const tag = `${++seq}_${Date.now().toString(36)}`;
  const creator = `rb_creator_${tag}`;
  const owner = `rb_buyer_${tag}`;
  expect((await api("POST", "/v1/participants", { participant_id: creator, default_split_percent: 80 })).status).toBe(201);
  const wallet = (await api("POST", "/v1/wallets", { owner_id: owner })).body["wallet"] as Body;
  const walletId = String(wallet["id"]);
  expect((await api("POST", `/v1/wallets/${walletId}/topups`, { amount: amount + 1_000, reference_id: `fund_${tag}` })).status).toBe(201);
  const cs = await api("POST", "/v1/checkout-sessions", {
    participant_id: creator,
    amount,
    purchase_mode: "direct_funded_wallet",
    customer_id: owner,
    product_name: "Vinyl <LP>",
  });
  expect(cs.status).toBe(201);
  const session = cs.body["checkout_session"] as Body;
  expect(session["status"]).toBe("completed");
  return { owner, walletId, saleReference: String(session["sale_reference"]), creator };
}

async function walletSession(owner: string, permissions: string[]): Promise<{ id: string; url: string }> {
  const r = await api("POST", "/v1/wallet-sessions", { owner_id: owner, customer_email: "buyer@example.com", permissions });
  expect(r.status).toBe(201);
  const ws = r.body["wallet_session"] as Body;
  return { id: String(ws["id"]), url: String(ws["wallet_url"]) };
}

async function walletBalance(walletId: string): Promise<number> {
  return Number(((await api("GET", `/v1/wallets/${walletId}`)).body["wallet"] as Body)["balance"]);
}

async function requestsOf(saleReference: string): Promise<Body[]> {
  return (await api("GET", `/v1/refund-requests?sale_reference=${encodeURIComponent(saleReference)}`)).body["refund_requests"] as Body[];
}

describe("wallet page refund request", () => {
  // Proves the form creates one refund request for the chosen purchase with the session's buyer, and approval refunds the wallet.
  it("asks for a refund of a purchase; approval puts the money back", async () => {
    const b = await buyerWithPurchase(2_500);
    const ws = await walletSession(b.owner, ["view_balance", "list_activity", "request_refund"]);
    const page = await context.newPage();
    await page.goto(ws.url);
    expect(await page.locator("#balance").textContent()).toBe("$10.00");
    const option = page.locator("#sale_reference option");
    expect(await option.count()).toBe(1);
    expect(await option.getAttribute("value")).toBe(b.saleReference);
    expect(await option.textContent()).toContain("$25.00");
    expect(await option.textContent()).toContain("Vinyl <LP>");
    // Blank reason: the browser's own check keeps the form; an over-large amount is refused by the page.
    await page.fill("#refund_amount", "30.00");
    await page.fill("#refund_reason", "Scratched");
    await page.click("#request-refund");
    await page.waitForSelector("#message");
    expect(await page.locator("#message").textContent()).toContain("more than the purchase");
    expect(await requestsOf(b.saleReference)).toEqual([]);

    const nonce = String(await page.locator("#refund-form input[name=nonce]").getAttribute("value"));
    await page.fill("#refund_amount", "10.00");
    await page.fill("#refund_reason", "Scratched");
    await Promise.all([page.waitForURL(/refund_request=rr_/), page.click("#request-refund")]);
    expect(await page.locator("#message").textContent()).toContain("Refund requested");
    const [rr] = await requestsOf(b.saleReference);
    expect(rr).toMatchObject({
      status: "created",
      customer_id: b.owner,
      customer_email: "buyer@example.com",
      amount_cents: 1_000,
      reason: "Scratched",
      metadata: { source: "wallet_page", wallet_session_id: ws.id, wallet_id: b.walletId },
    });
    expect(await page.content()).not.toMatch(/s(l)?k_(test|live)_/);

    // The same rendered form submitted again (its nonce) answers the same request.
    const again = await page.request.post(`${ws.url}/refund-request`, {
      form: { nonce, sale_reference: b.saleReference, amount: "10.00", reason: "Scratched" },
      maxRedirects: 0,
    });
    expect(again.status()).toBe(303);
    expect(again.headers()["location"]).toContain(`refund_request=${String(rr?.["id"])}`);
    expect(await requestsOf(b.saleReference)).toHaveLength(1);

    const approved = await api("POST", `/v1/refund-requests/${String(rr?.["id"])}/approve`, { reviewed_by_actor: "support" });
    expect(approved.body).toMatchObject({ refund_request: { status: "completed" }, refund: { refunded_amount_cents: 1_000 } });
    expect(await walletBalance(b.walletId)).toBe(2_000);
    await page.goto(ws.url);
    expect(await page.locator("#balance").textContent()).toBe("$20.00");
    await page.close();
  });

  // Proves the permission gate and that only the wallet's own purchases can be named, whatever the browser posts.
  it("no form without request_refund; forged posts are refused and create nothing", async () => {
    const b = await buyerWithPurchase(1_500);
    const other = await buyerWithPurchase(1_200);
    const plain = await walletSession(b.owner, ["view_balance", "list_activity"]);
    const page = await context.newPage();
    await page.goto(plain.url);
    expect(await page.locator("#balance").count()).toBe(1);
    expect(await page.locator("#refund-form").count()).toBe(0);
    const forged = await page.request.post(`${plain.url}/refund-request`, {
      form: { nonce: crypto.randomUUID(), sale_reference: b.saleReference, reason: "x" },
    });
    expect(forged.status()).toBe(403);

    const allowed = await walletSession(b.owner, ["request_refund"]);
    const notMine = await page.request.post(`${allowed.url}/refund-request`, {
      form: { nonce: crypto.randomUUID(), sale_reference: other.saleReference, reason: "not mine" },
    });
    expect(notMine.status()).toBe(422);
    expect(await notMine.text()).toContain("Choose one of your purchases");
    const noNonce = await page.request.post(`${allowed.url}/refund-request`, { form: { sale_reference: b.saleReference, reason: "x" } });
    expect(noNonce.status()).toBe(422);
    const noReason = await page.request.post(`${allowed.url}/refund-request`, {
      form: { nonce: crypto.randomUUID(), sale_reference: b.saleReference, reason: " " },
    });
    expect(noReason.status()).toBe(422);
    expect(await requestsOf(b.saleReference)).toEqual([]);
    expect(await requestsOf(other.saleReference)).toEqual([]);
    await page.close();
  });
});
