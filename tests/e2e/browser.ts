// Headless Chromium for the hosted-page tests: the machine's /usr/bin/chromium driven by playwright-core, with a
// fresh profile per run and the flags that keep it off the network (this machine has none to offer).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

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
