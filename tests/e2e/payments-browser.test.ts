// Proves the hosted pages in a real headless browser: paying with the success card redirects and credits the
// creator exactly the share; the decline card shows a message and moves nothing; no API key reaches a page.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BrowserContext } from "playwright-core";
import { launchChromium, type Browser } from "./browser.ts";
import { call, startStack, type Stack } from "./stack.ts";

let s: Stack;
let browser: Browser | undefined;
let context: BrowserContext;
let shop: Server;
let shopUrl: string;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments"] });
  // The merchant's site: where success_url and cancel_url lead.
  shop = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><title>shop</title><h1 id="shop">${req.url?.startsWith("/ok") ? "Thanks" : "Cancelled"}</h1>`);
  });
  await new Promise<void>((r) => shop.listen(0, "127.0.0.1", r));
  const addr = shop.address();
  shopUrl = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  browser = await launchChromium("payments-browser");
  context = browser.context;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => (shop ? shop.close(() => r()) : r()));
  await s?.stop();
});

async function creatorBalance(pid: string): Promise<number> {
  const r = await call(s.baseUrl, "GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, { key: s.testKey });
  return Number((r.body["wallets"] as Record<string, unknown>[])[0]?.["balance"]);
}

async function checkout(pid: string, extra: Record<string, unknown> = {}): Promise<{ id: string; url: string }> {
  const r = await call(s.baseUrl, "POST", "/v1/checkout-sessions", {
    key: s.testKey,
    body: {
      participant_id: pid,
      amount: 4_999,
      product_name: "Guitar <lessons> & more",
      success_url: `${shopUrl}/ok`,
      cancel_url: `${shopUrl}/cancel`,
      ...extra,
    },
  });
  expect(r.status).toBe(201);
  const cs = r.body["checkout_session"] as Record<string, string>;
  return { id: cs["id"]!, url: cs["checkout_url"]! };
}

function assertNoKeys(html: string): void {
  expect(html).not.toContain(s.testKey);
  expect(html).not.toContain(s.liveKey);
  expect(html).not.toMatch(/s(l)?k_(test|live)_/);
}

describe("hosted checkout page", () => {
  // Proves the success card completes the session through the page, redirects to success_url with the id, and credits exactly the share.
  it("pays with 4242 4242 4242 4242", async () => {
    const pid = `browser_${Date.now().toString(36)}`;
    expect(
      (
        await call(s.baseUrl, "POST", "/v1/participants", {
          key: s.testKey,
          body: { participant_id: pid, display_name: "Ana's <Studio>", default_split_percent: 85 },
        })
      ).status,
    ).toBe(201);
    const cs = await checkout(pid);
    const page = await context.newPage();
    await page.goto(cs.url);
    expect(await page.locator("#merchant").textContent()).toBe("Ana's <Studio>");
    expect(await page.locator("#product").textContent()).toBe("Guitar <lessons> & more");
    expect(await page.locator("#amount").textContent()).toContain("$49.99");
    assertNoKeys(await page.content());
    await page.fill("#card_number", "4242 4242 4242 4242");
    await page.fill("#exp", "12/34");
    await page.fill("#cvc", "123");
    await Promise.all([page.waitForURL(`${shopUrl}/ok?checkout_session_id=${cs.id}`), page.click("#pay")]);
    expect(await page.locator("#shop").textContent()).toBe("Thanks");
    // floor(4999 × 85 %) = 4249.
    expect(await creatorBalance(pid)).toBe(4249);
    // The page now shows the completed state and offers no form.
    await page.goto(cs.url);
    expect(await page.locator("#state").textContent()).toContain("Payment complete");
    expect(await page.locator("#pay-form").count()).toBe(0);
    await page.close();
  });

  // Proves the decline card shows a message, leaves the session pending and moves no money; cancel leads to cancel_url.
  it("declines 4000 0000 0000 0002", async () => {
    const pid = `browser_d_${Date.now().toString(36)}`;
    expect((await call(s.baseUrl, "POST", "/v1/participants", { key: s.testKey, body: { participant_id: pid } })).status).toBe(201);
    const cs = await checkout(pid);
    const page = await context.newPage();
    await page.goto(cs.url);
    await page.fill("#card_number", "4000 0000 0000 0002");
    await page.click("#pay");
    await page.waitForSelector("#message");
    expect(await page.locator("#message").textContent()).toContain("declined");
    assertNoKeys(await page.content());
    expect(await creatorBalance(pid)).toBe(0);
    const [row] = await s.env.adminSql<{ status: string }[]>`select status from payments.checkout_sessions where id = ${cs.id}`;
    expect(row?.status).toBe("pending");
    const [tx] = await s.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${`checkout:${cs.id}`}`;
    expect(tx?.n).toBe("0");
    await Promise.all([page.waitForURL(`${shopUrl}/cancel`), page.click("#cancel")]);
    await page.close();
  });

  // Proves the wallet page shows the balance, and its sandbox top-up form funds the wallet with the success card only.
  it("wallet page top-up", async () => {
    const r = await call(s.baseUrl, "POST", "/v1/wallet-sessions", { key: s.testKey, body: { customer_email: `buyer.${Date.now()}@example.com` } });
    expect(r.status).toBe(201);
    const ws = r.body["wallet_session"] as Record<string, string>;
    const page = await context.newPage();
    await page.goto(ws["wallet_url"]!);
    expect(await page.locator("#balance").textContent()).toBe("$0.00");
    await page.fill("#amount", "12.34");
    await page.fill("#card_number", "4000000000000002");
    await page.click("#topup");
    await page.waitForSelector("#message");
    expect(await page.locator("#message").textContent()).toContain("declined");
    expect(await page.locator("#balance").textContent()).toBe("$0.00");
    await page.fill("#amount", "12.34");
    await page.fill("#card_number", "4242424242424242");
    await Promise.all([page.waitForURL(/topup=ok/), page.click("#topup")]);
    expect(await page.locator("#balance").textContent()).toBe("$12.34");
    expect(await page.locator("#activity").textContent()).toContain("$12.34");
    assertNoKeys(await page.content());
    const w = await call(s.baseUrl, "GET", `/v1/wallets/${ws["wallet_id"]}`, { key: s.testKey });
    expect((w.body["wallet"] as Record<string, unknown>)["balance"]).toBe(1234);
    await page.close();
  });
});
