// Headless Chromium for the hosted-page tests: the machine's /usr/bin/chromium driven by playwright-core, with a
// fresh profile per run and the flags that keep it off the network (this machine has none to offer).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import axe from "axe-core";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(name: string): Promise<Browser> {
  // launchPersistentContext owns the --user-data-dir flag: a fresh folder per run.
  const profileDir = mkdtempSync(join(tmpdir(), `${name}-`));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

/** Cents as a page should show dollars, by another route than the pages' own formatter. */
export const dollars = (cents: number): string => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(cents / 100);

/** The rows `rowsSelector` matches, as text cell by cell. */
export function tableRows(page: Page, rowsSelector: string): Promise<string[][]> {
  return page
    .locator(rowsSelector)
    .evaluateAll((rows) =>
      rows.map((r) => Array.from((r as unknown as { cells: ArrayLike<{ textContent: string | null }> }).cells, (c) => (c.textContent ?? "").trim())),
    );
}

/** axe-core's violations on the page as it is now. */
export async function axeViolations(page: Page): Promise<unknown[]> {
  // Evaluated through the browser's debugging channel: the page's Content-Security-Policy rightly refuses inline scripts.
  await page.evaluate(axe.source);
  const results = await page.evaluate(() => (globalThis as unknown as { axe: typeof axe }).axe.run());
  return results.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target) }));
}

/** How wide the page is against the window (no sideways scrolling), and the smallest text among `textSelector`. */
export async function layout(page: Page, textSelector: string): Promise<{ scrollWidth: number; innerWidth: number; smallestFontPx: number }> {
  return page.evaluate((selector) => {
    const g = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number }; querySelectorAll(q: string): ArrayLike<unknown> };
      innerWidth: number;
      getComputedStyle(e: unknown): { fontSize: string };
    };
    const sizes = Array.from(g.document.querySelectorAll(selector), (e) => parseFloat(g.getComputedStyle(e).fontSize));
    return { scrollWidth: g.document.documentElement.scrollWidth, innerWidth: g.innerWidth, smallestFontPx: Math.min(...sizes) };
  }, textSelector);
}
