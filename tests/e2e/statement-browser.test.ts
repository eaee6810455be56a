// Proves the hosted payout statement page in a real headless browser: for a payout whose period holds sales, a
// partial refund and a rolling reserve held and released, the page shows the same opening balance, lines (date,
// type, reference, transaction, amount formatted from cents) and closing balance as GET /v1/payouts/{id}/statement,
// axe-core finds no accessibility violation, and it reads without sideways scrolling at 390 px and 1280 px wide.
// Screenshots at both widths are written to .data/test-output/ for a person to look at.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { repoRoot, waitFor } from "@treasury/testing";
import { axeViolations, dollars, launchChromium, layout, tableRows, type Browser } from "./browser.ts";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
let browser: Browser | undefined;
const outputDir = join(repoRoot(), ".data", "test-output");
const DAY = 86_400;

beforeAll(async () => {
  s = await startStack({
    services: ["ledger", "payments", "payouts", "refunds"],
    serviceEnv: { payouts: { PII_KEYS: generateKeyRingEntry("stmt1") } },
  });
  browser = await launchChromium("statement-browser");
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

async function sale(pid: string, amount: number): Promise<string> {
  const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: pid, amount }, 201))["checkout_session"] as Body;
  const done = await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: `stmt-${String(cs["id"])}` });
  return String((done["checkout_session"] as Body)["sale_reference"]);
}

const snapshot = async (pid: string) => (await ok("GET", `/v1/participants/${pid}`))["participant"] as Body;

/**
 * A creator (80 % share) with a 10 % rolling reserve of 3 days: a sale and a first payout, then, in the second
 * payout's period, two sales, a partial refund of the second and the reserve's release; the second payout takes
 * everything payable. Answers the second payout's id and gross amount.
 */
async function payoutWithHistory(): Promise<{ id: string; amount: number }> {
  const pid = `stmt_${Date.now().toString(36)}`;
  await ok("POST", "/v1/participants", { participant_id: pid, display_name: "Statement <Studio>", default_split_percent: 80 }, 201);
  await ok("PUT", `/v1/participants/${pid}/reserve`, { type: "rolling", percent: 10, days: 3 });
  await sale(pid, 5_000);
  await ok("POST", "/v1/payouts", { participant_id: pid, amount: 1_000, reference_id: `stmt-first-${pid}` }, 201);
  await sale(pid, 12_345);
  const refunded = await sale(pid, 2_500);
  await ok("POST", "/v1/refunds", { sale_reference: refunded, amount: 1_000, reason: "damaged", idempotency_key: `stmt-rf-${pid}` }, 201);
  expect(Number((await snapshot(pid))["reserved_amount_cents"])).toBeGreaterThan(0);
  await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: 3 * DAY + 60 });
  await waitFor(async () => (await snapshot(pid))["reserved_amount_cents"] === 0, { timeoutMs: 20_000 });
  const amount = Number((await snapshot(pid))["payable_balance_cents"]);
  const payout = (await ok("POST", "/v1/payouts", { participant_id: pid, amount, reference_id: `stmt-second-${pid}` }, 201))["payout"] as Body;
  return { id: String(payout["id"]), amount };
}

const minute = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
const TYPE_LABELS: Record<string, string> = { sale: "Sale", refund: "Refund", payout: "Payout", reserve: "Reserve", reserve_release: "Reserve released" };

describe("hosted payout statement page", () => {
  it("shows the statement's figures as the API answers them, accessibly, on a phone and a desktop", { timeout: 90_000 }, async () => {
    const payout = await payoutWithHistory();
    const statement = (await ok("GET", `/v1/payouts/${payout.id}/statement`))["statement"] as Body;
    const lines = statement["lines"] as Body[];
    expect(lines.map((l) => l["type"])).toEqual(["sale", "sale", "refund", "payout"]);
    expect(lines.at(-1)?.["amount_cents"]).toBe(-payout.amount);

    const page = await (browser as Browser).context.newPage();
    const url = `${s.altUrl}/v1/payouts/${payout.id}/statement/view`;
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      const res = await page.goto(url);
      expect(res?.status()).toBe(200);
      expect(await page.locator("#payout-id").textContent()).toBe(payout.id);
      expect(await page.locator("#amount").textContent()).toBe(dollars(payout.amount));
      const [opening, ...movements] = await tableRows(page, "#statement tbody tr");
      expect(opening?.at(-1)).toBe(dollars(Number(statement["opening_balance_cents"])));
      expect(movements).toEqual(
        lines.map((l) => [
          minute(String(l["occurred_at"])),
          TYPE_LABELS[String(l["type"])],
          l["reference"],
          l["transaction_id"],
          dollars(Number(l["amount_cents"])),
        ]),
      );
      expect(await page.locator("#closing td").textContent()).toBe(dollars(Number(statement["closing_balance_cents"])));
      expect(await page.content()).not.toMatch(/s(l)?k_(test|live)_/);

      await page.screenshot({ path: join(outputDir, `statement-page-${width}.png`), fullPage: true });
      // Soft: each width's findings are all reported, the other width's too.
      expect.soft(await axeViolations(page), `axe at ${width} px`).toEqual([]);
      const box = await layout(page, "#statement td, #statement th, #statement code");
      expect.soft(box.scrollWidth, `sideways scrolling at ${width} px`).toBeLessThanOrEqual(box.innerWidth);
      expect.soft(box.smallestFontPx, `smallest table text at ${width} px`).toBeGreaterThanOrEqual(12);
    }
    await page.close();
  });
});
