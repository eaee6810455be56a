// The operator console in headless Chromium through the gateway's browser (alt) listener, on the real services:
// an operator created with the CLI (password on stdin) signs in, finds a payout by id and follows its path,
// reveals a KYC submission with a reason and approves it (the audit log shows who and why), creates and revokes
// a key (the next API call with it is 401); a viewer's approval is refused by the server; a forged CSRF token and
// a planted session id fail. axe-core finds no violation on each page; screenshots at 1280 and 390 px are kept in
// .data/artifacts/console/.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, waitFor } from "@treasury/testing";
import { axeViolations, launchChromium, type Browser } from "./browser.ts";
import { adminNatsUrl } from "./admin-run.ts";
import { apiOf, creatorKycBody, fund, newParticipant, startPayoutsStack, type Api, type PayoutsStack } from "./payouts-stack.ts";
import { call } from "./stack.ts";

const PASSWORD = "a long operator passphrase";
const outputDir = join(repoRoot(), ".data", "artifacts", "console");
let p: PayoutsStack;
let api: Api;
let browser: Browser;
let page: Page;

/** `npm run admin -- operator create …` with the password written to its stdin, as an operator would pipe it. */
function createOperator(email: string, role: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("node", ["--import", "tsx", "scripts/admin.ts", "operator", "create", "--email", email, "--role", role, "--password-stdin"], {
      cwd: repoRoot(),
      env: { ...process.env, NATS_URL: adminNatsUrl(p.env), NATS_PREFIX: p.env.prefix },
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
    child.stdin.end(`${PASSWORD}\n`);
  });
}

/** Checks the page at both widths: no axe violation, no sideways scrolling of the page, a screenshot of each. */
async function inspect(name: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(outputDir, `${name}-${width}.png`), fullPage: true });
    expect.soft(await axeViolations(page), `${name}: axe at ${width} px`).toEqual([]);
    const overflow = await page.evaluate(() => {
      const g = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
      return g.document.documentElement.scrollWidth - g.innerWidth;
    });
    expect.soft(overflow, `${name}: page wider than ${width} px`).toBeLessThanOrEqual(0);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function signIn(email: string): Promise<void> {
  await page.goto(`${p.s.altUrl}/console/sign-in`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${p.s.altUrl}/console`);
}

async function sessionCookie(): Promise<string | undefined> {
  return (await page.context().cookies()).find((c) => c.name === "console_session")?.value;
}

/** The CSRF token of the page's forms (every signed-in page has the sign-out form). */
async function csrfToken(): Promise<string> {
  return page.locator('input[name="_csrf"]').first().inputValue();
}

beforeAll(async () => {
  mkdirSync(outputDir, { recursive: true });
  p = await startPayoutsStack({ console: true });
  api = apiOf(p);
  for (const [email, role] of [
    ["admin@example.com", "admin"],
    ["viewer@example.com", "viewer"],
  ] as const) {
    const r = await createOperator(email, role);
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toContain(PASSWORD);
  }
  browser = await launchChromium("console");
  page = await browser.context.newPage();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
});

describe("operator console", () => {
  it("signs in and finds a payout by id, following its path to the ledger", { timeout: 120_000 }, async () => {
    // Proves sign-in through the gateway and the find page: the payout's rows, its ledger transaction linked.
    const pid = await newParticipant(api, p.s.testKey);
    await fund(api, p.s.testKey, pid, 5000);
    const r = await api("POST", "/v1/payouts", p.s.testKey, { participant_id: pid, amount: 1234, reference_id: `console_${pid}` });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const payoutId = String((r.body["payout"] as { id: string }).id);
    await page.goto(`${p.s.altUrl}/console/sign-in`);
    await inspect("sign-in");
    await signIn("admin@example.com");
    await inspect("home");
    await page.getByLabel("Any id").fill(payoutId);
    await page.getByRole("button", { name: "Find" }).click();
    await expect.poll(() => page.locator("h2", { hasText: "payouts.payouts" }).count()).toBe(1);
    const txnLink = page.locator('a.id[href*="find?id=txn_"]').first();
    const txnId = (await txnLink.textContent()) ?? "";
    expect(txnId).toMatch(/^txn_/);
    await inspect("find-payout");
    await txnLink.click();
    await page.waitForURL(`**/console/find?id=${txnId}`);
    await expect.poll(() => page.locator("h2", { hasText: "ledger." }).count()).toBeGreaterThan(0);
    expect(await page.locator(`a.id[href$="${payoutId}"]`).count()).toBeGreaterThan(0);
  });

  it("reveals a KYC submission with a reason and approves it; the audit log shows who and why", { timeout: 120_000 }, async () => {
    // Proves the review path: personal data only after "reveal", recorded by the kyc service with the operator and reason.
    const pid = await newParticipant(api, p.s.liveKey);
    const r = await api("POST", `/v1/kyc/creators/${pid}`, p.s.liveKey, creatorKycBody());
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const kyc = r.body["creator_kyc"] as { status: string; latest_submission: { id: string } };
    const id = kyc.latest_submission.id;
    await page.goto(`${p.s.altUrl}/console/kyc?status=${kyc.status}&subject=creator&org=${p.s.orgId}`);
    await inspect("kyc-queue");
    await page.locator(`a[href="/console/kyc/${id}"]`).click();
    await page.waitForURL(`**/console/kyc/${id}`);
    expect(await page.content()).not.toContain("Ada Quill Lovelace");
    await inspect("kyc-submission");
    const reveal = page.locator('form[action$="/reveal"]');
    await reveal.getByLabel("Reason").fill("checking the passport against the name");
    await reveal.getByRole("button", { name: "Reveal personal data" }).click();
    await expect.poll(() => page.getByText("Ada Quill Lovelace").count()).toBeGreaterThan(0);
    await inspect("kyc-revealed");
    const approve = page.locator('form:has(input[name="decision"][value="approve"])');
    await approve.getByLabel("Reason (optional)").fill("passport matches");
    await approve.getByRole("button", { name: "Approve" }).click();
    await page.waitForURL(`**/console/kyc/${id}?done=approve`);
    await expect.poll(() => page.getByText("Recorded: approved.").count()).toBe(1);
    const actions = await p.env.adminSql<{ action: string; actor: string; reason: string }[]>`
      select action, actor, reason from kyc.review_actions where submission_id = ${id} order by id`;
    expect(actions).toEqual([
      { action: "view", actor: "operator:admin@example.com", reason: "checking the passport against the name" },
      { action: "approve", actor: "operator:admin@example.com", reason: "passport matches" },
    ]);
    await page.goto(`${p.s.altUrl}/console/audit?target=${id}`);
    const auditText = await page.locator("main").innerText();
    expect(auditText).toContain("operator:admin@example.com");
    expect(auditText).toContain("passport matches");
    await inspect("audit");
  });

  it("creates a key and revokes it: the next API call with it is 401", { timeout: 120_000 }, async () => {
    // Proves the admin's key actions go to the gateway and take effect on the API.
    await page.goto(`${p.s.altUrl}/console/orgs?org=${p.s.orgId}`);
    await inspect("org");
    const create = page.locator('form[action$="/keys"]');
    await create.getByLabel("Environment").selectOption("test");
    await create.getByRole("button", { name: "Create key" }).click();
    const apiKey = (await page.locator("code.secret").textContent()) ?? "";
    expect(apiKey.length).toBeGreaterThan(20);
    expect((await call(p.s.baseUrl, "GET", "/v1/participants", { key: apiKey })).status).toBe(200);
    const keyId = String((await page.getByText(/^Key key_\w+ created/).textContent())?.split(" ")[1]);
    const revoke = page.locator(`form[action="/console/keys/${keyId}/revoke"]`);
    await revoke.getByLabel("Reason").fill("key leaked in a ticket");
    await revoke.getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => page.getByText("Recorded: key revoked.").count()).toBe(1);
    await waitFor(async () => (await call(p.s.baseUrl, "GET", "/v1/participants", { key: apiKey })).status === 401, { timeoutMs: 10_000 });
    const [row] = await p.env.adminSql<
      { actor: string; reason: string }[]
    >`select actor, reason from gateway.audit_log where action = 'key.revoke' and ${keyId} = any(target_ids)`;
    expect(row).toEqual({ actor: "operator:admin@example.com", reason: "key leaked in a ticket" });
  });

  it("shows the risk review queue, runs the ledger's invariant check and cuts a payout file", { timeout: 120_000 }, async () => {
    // Proves the risk queue and the checks page answer through their owners, and are accessible at both widths.
    await page.goto(`${p.s.altUrl}/console/risk`);
    expect((await page.locator("caption", { hasText: "Risk reviews pending" }).count()) + (await page.getByText("None.").count())).toBeGreaterThan(0);
    await inspect("risk-reviews");
    await page.goto(`${p.s.altUrl}/console/checks`);
    await page.getByRole("button", { name: "Verify the ledger's invariants" }).click();
    await expect.poll(() => page.getByText("Every check passed.").count()).toBe(1);
    await inspect("checks");
    await page.goto(`${p.s.altUrl}/console/payouts`);
    await inspect("payouts");
    const cut = page.locator('form[action$="/payouts/cut-file"]');
    await cut.getByLabel("Reason").fill("end of day file");
    await cut.getByRole("button", { name: "Cut a file" }).click();
    await expect.poll(() => page.locator("h2", { hasText: "File cut" }).count()).toBe(1);
    const [row] = await p.env.adminSql<{ actor: string; reason: string }[]>`select actor, reason from payouts.audit_log where action = 'payouts.cut-file'`;
    expect(row).toEqual({ actor: "operator:admin@example.com", reason: "end of day file" });
  });

  it("refuses a forged CSRF token and never signs in a planted session id", { timeout: 60_000 }, async () => {
    // Proves the synchronizer token on a POST and that sign-in issues a fresh session id.
    const forged = await page.request.post(`${p.s.altUrl}/console/orgs/${p.s.orgId}/status`, {
      form: { _csrf: "forged-token", status: "suspend", reason: "csrf attempt" },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    const [org] = await p.env.adminSql<{ status: string }[]>`select status from gateway.orgs where id = ${p.s.orgId}`;
    expect(org?.status).toBe("active");
    await page.context().clearCookies();
    const planted = "P".repeat(43);
    const url = new URL(p.s.altUrl);
    await page.context().addCookies([{ name: "console_session", value: planted, domain: url.hostname, path: "/", httpOnly: true, sameSite: "Strict" }]);
    await signIn("admin@example.com");
    const issued = await sessionCookie();
    expect(issued).toBeDefined();
    expect(issued).not.toBe(planted);
    const asAttacker = await page.request.get(`${p.s.altUrl}/console`, { headers: { cookie: `console_session=${planted}` }, maxRedirects: 0 });
    expect(asAttacker.status()).toBe(303);
  });

  it("refuses a viewer's approval on the server, not only by hiding the button", { timeout: 60_000 }, async () => {
    // Proves roles are enforced by the server: a viewer's well-formed POST with a valid CSRF token is refused.
    const pid = await newParticipant(api, p.s.liveKey);
    const r = await api("POST", `/v1/kyc/creators/${pid}`, p.s.liveKey, creatorKycBody());
    const id = (r.body["creator_kyc"] as { latest_submission: { id: string } }).latest_submission.id;
    await page.context().clearCookies();
    await signIn("viewer@example.com");
    await page.goto(`${p.s.altUrl}/console/kyc/${id}`);
    expect(await page.locator('form[action$="/decide"]').count()).toBe(0);
    await inspect("kyc-submission-viewer");
    const refused = await page.request.post(`${p.s.altUrl}/console/kyc/${id}/decide`, {
      form: { _csrf: await csrfToken(), decision: "approve", reason: "not mine to decide" },
      maxRedirects: 0,
    });
    expect(refused.status()).toBe(403);
    expect(await refused.text()).toContain("may not do this");
    const [n] = await p.env.adminSql<{ n: number }[]>`select count(*)::int as n from kyc.review_actions where submission_id = ${id} and action = 'approve'`;
    expect(n?.n).toBe(0);
  });
});
