// Proves the hosted invoice page in a real headless browser: for a sent invoice with a fractional quantity and a
// partial payment, the page at the invoice's hosted_url shows its number, status, customer, dates, lines, total,
// paid and due amounts as GET /v1/invoices/{id} answers them (dollars formatted from cents), axe-core finds no
// accessibility violation, and it reads without sideways scrolling at 390 px and 1280 px wide. An id of another
// shape or of no invoice is a 404. Screenshots at both widths are written to .data/test-output/.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "@treasury/testing";
import { axeViolations, dollars, launchChromium, layout, tableRows, type Browser } from "./browser.ts";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
let browser: Browser | undefined;
const outputDir = join(repoRoot(), ".data", "test-output");

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "invoicing"] });
  browser = await launchChromium("invoice-browser");
  mkdirSync(outputDir, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<Body> {
  const r = await call(s.baseUrl, method, path, { key: s.testKey, ...(body === undefined ? {} : { body }) });
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

describe("hosted invoice page", () => {
  it("shows the invoice as the API answers it, accessibly, on a phone and a desktop", { timeout: 90_000 }, async () => {
    const created = (
      await ok(
        "POST",
        "/v1/invoices",
        {
          customer_name: "Studio <Ada> & Co",
          due_date: "2099-12-31",
          terms: "Net 30",
          notes: "Thank you for your business.",
          line_items: [
            { description: "Illustration, cover and two spreads for the spring catalogue", quantity: 3, unit_price_cents: 45_000 },
            { description: "Revisions (hours)", quantity: "1.25", unit_price_cents: 8_000 },
          ],
        },
        201,
      )
    )["invoice"] as Body;
    const id = String(created["id"]);
    await ok("POST", `/v1/invoices/${id}/send`, {});
    await ok("POST", `/v1/invoices/${id}/record-payment`, { amount: 50_000, reference_id: `page-${id}` }, 201);
    const inv = (await ok("GET", `/v1/invoices/${id}`))["invoice"] as Body;
    expect(inv).toMatchObject({ status: "partially_paid", total_cents: 145_000, amount_due_cents: 95_000 });
    const url = String(inv["hosted_url"]);
    expect(url).toBe(`${s.altUrl}/v1/invoices/${id}/view`);

    const page = await (browser as Browser).context.newPage();
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      const res = await page.goto(url);
      expect(res?.status()).toBe(200);
      expect(await page.locator("#number").textContent()).toBe(inv["number"]);
      expect(await page.locator("#status").textContent()).toBe("Partially paid");
      expect(await page.locator("#customer").textContent()).toBe("Studio <Ada> & Co");
      expect(await page.locator("#due-date").textContent()).toBe("2099-12-31");
      expect(await page.locator("#amount-due").textContent()).toBe(dollars(95_000));
      const items = inv["line_items"] as Body[];
      expect(await tableRows(page, "#lines tbody tr")).toEqual(
        items.map((l) => [l["description"], l["quantity"], dollars(Number(l["unit_price_cents"])), dollars(Number(l["amount_cents"]))]),
      );
      expect(await tableRows(page, "#lines tfoot tr")).toEqual([
        ["Total", dollars(145_000)],
        ["Paid", dollars(50_000)],
        ["Amount due", dollars(95_000)],
      ]);
      expect(await page.content()).not.toMatch(/s(l)?k_(test|live)_/);

      await page.screenshot({ path: join(outputDir, `invoice-page-${width}.png`), fullPage: true });
      expect.soft(await axeViolations(page), `axe at ${width} px`).toEqual([]);
      const box = await layout(page, "#lines td, #lines th");
      expect.soft(box.scrollWidth, `sideways scrolling at ${width} px`).toBeLessThanOrEqual(box.innerWidth);
      expect.soft(box.smallestFontPx, `smallest table text at ${width} px`).toBeGreaterThanOrEqual(12);
    }
    await page.close();
    for (const bad of ["inv_nosuchinvoice", "not-an-id"]) expect((await fetch(`${s.altUrl}/v1/invoices/${bad}/view`)).status).toBe(404);
  });
});
