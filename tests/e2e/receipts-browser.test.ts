// Proves the hosted receipt page in a real headless browser: it shows the sale and its signed ledger proof,
// escapes merchant data, carries no API key, prints cleanly (print style sheet, PDF), and answers 404 HTML for
// an unknown receipt. A screenshot and the PDF are written to .data/test-output/ for a person to look at.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { BrowserContext } from "playwright-core";
import { launchChromium, type Browser } from "./browser.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { repoRoot } from "@treasury/testing";
import { buildReceipts, type ReceiptsService } from "../../services/receipts/src/service.ts";
import { call, startStack, type Stack } from "./stack.ts";

let s: Stack;
let receipts: ReceiptsService;
let browser: Browser | undefined;
let context: BrowserContext;
const outputDir = join(repoRoot(), ".data", "test-output");

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments"] });
  receipts = await buildReceipts(s.env.env("receipts", { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("page1") }));
  await receipts.start();
  browser = await launchChromium("receipts-browser");
  context = browser.context;
  mkdirSync(outputDir, { recursive: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await receipts?.stop();
  await s?.stop();
});

async function receipt(): Promise<{ hostedUrl: string; receiptId: string; hash: string; sale: string }> {
  const pid = `page_${randomBytes(4).toString("hex")}`;
  await call(s.baseUrl, "POST", "/v1/participants", {
    key: s.testKey,
    body: { participant_id: pid, display_name: "Ana's <Studio>", default_split_percent: 80 },
  });
  const cs = await call(s.baseUrl, "POST", "/v1/checkout-sessions", {
    key: s.testKey,
    body: { participant_id: pid, amount: 123_456, product_name: "Mixing <course> & more" },
  });
  const id = (cs.body["checkout_session"] as { id: string }).id;
  const done = await call(s.baseUrl, "POST", `/v1/sandbox/checkouts/${id}/complete`, { key: s.testKey, body: {} });
  const sale = (done.body["checkout_session"] as { sale_transaction_id: string }).sale_transaction_id;
  const gen = await call(s.baseUrl, "POST", "/v1/receipts/generate", { key: s.testKey, body: { checkout_id: id, order_id: "ORD-42" } });
  expect(gen.status).toBe(201);
  const receiptId = gen.body["receipt_id"] as string;
  const proof = await call(s.baseUrl, "GET", `/v1/receipts/${receiptId}/proof`, { key: s.testKey });
  return { hostedUrl: gen.body["hosted_url"] as string, receiptId, hash: (proof.body["proof"] as { receipt_hash: string }).receipt_hash, sale };
}

describe("hosted receipt page", () => {
  it("shows the sale and its proof, escaped, without keys, and prints", async () => {
    // Proves what a buyer sees and prints: every fact, the same receipt hash as the API, and no on-screen hints on paper.
    const r = await receipt();
    expect(r.hostedUrl.startsWith(s.altUrl)).toBe(true);
    const page = await context.newPage();
    const res = await page.goto(r.hostedUrl);
    expect(res?.status()).toBe(200);
    expect(await page.title()).toBe("Receipt · Ana's <Studio>");
    expect(await page.locator("#merchant").textContent()).toBe("Ana's <Studio>");
    expect(await page.locator("#product").textContent()).toBe("Mixing <course> & more");
    expect(await page.locator("#amount").textContent()).toContain("$1,234.56");
    expect(await page.locator("#total").textContent()).toBe("$1,234.56 USD");
    expect(await page.locator("#order-id").textContent()).toBe("ORD-42");
    expect(await page.locator("#receipt-id").textContent()).toBe(r.receiptId);
    expect(await page.locator("#sale-transaction-id").textContent()).toBe(r.sale);
    expect(await page.locator("#receipt-hash").textContent()).toBe(r.hash);
    expect(await page.locator("#chain-sequence").textContent()).toMatch(/^\d+$/);
    expect(await page.locator("#sandbox-note").isVisible()).toBe(true);
    expect(await page.locator("#jwks-link").getAttribute("href")).toBe(`${s.altUrl}/v1/receipts/jwks`);
    const html = await page.content();
    expect(html).not.toContain(s.testKey);
    expect(html).not.toMatch(/s(l)?k_(test|live)_/);
    expect(html).not.toContain("<course>");
    await page.screenshot({ path: join(outputDir, "receipt-page.png"), fullPage: true });

    expect(await page.locator("#verify-note").isVisible()).toBe(true);
    await page.emulateMedia({ media: "print" });
    expect(await page.locator("#verify-note").isVisible()).toBe(false);
    expect(await page.locator("#receipt-hash").isVisible()).toBe(true);
    const styleOf = (el: unknown) => (globalThis as unknown as { getComputedStyle(e: unknown): { boxShadow: string } }).getComputedStyle(el).boxShadow;
    expect(await page.locator("main").evaluate(styleOf)).toBe("none");
    const pdf = await page.pdf({ format: "A4" });
    expect(pdf.subarray(0, 5).toString()).toBe("%PDF-");
    writeFileSync(join(outputDir, "receipt-page.pdf"), pdf);
    await page.screenshot({ path: join(outputDir, "receipt-page-print.png"), fullPage: true });
    await page.close();
  });

  it("answers an unknown or malformed receipt id with a 404 page", async () => {
    // Proves the page route needs the real unguessable id and never falls back to anything else.
    const page = await context.newPage();
    for (const id of ["rcpt_unknown00000000000000000", "nope"]) {
      const res = await page.goto(`${s.altUrl}/v1/receipts/${id}/view`);
      expect(res?.status()).toBe(404);
      expect(await page.content()).toContain("does not exist");
    }
    await page.close();
  });
});
