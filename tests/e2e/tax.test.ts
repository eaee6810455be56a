// Tax through the gateway: a year of sales and refunds for three creators posted with their accounting dates, one
// under the org's threshold; calculations equal to the ledger's figures to the cent; generation makes two
// documents and again still two; every document's sources sum to its amounts; the PDF recipient copy renders (to
// PNG, with pdftoppm) and reads back (pdftotext) with the amounts and only the TIN's last four digits; filed, then
// corrected into a new document linked to the original; the FIRE file read back by an independent reader with the
// right totals; CSV and JSON exports; events to a webhook endpoint; precise 4xx; scope and isolation.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";
import { bAmount, controlTotal, ledgerPoster, readFire, type Poster } from "./tax-support.ts";

let s: Stack;
let poster: Poster;
let receiver: http.Server;
const deliveries: { type: string; data: Record<string, unknown> }[] = [];
const scratch = mkdtempSync(join(tmpdir(), "tax-e2e-"));
const YEAR = 2025;

const api = (method: string, path: string, key: string, body?: unknown) => call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
const fetchRaw = (path: string, key: string) => fetch(s.baseUrl + path, { headers: { "x-api-key": key } });

/** What the test posted, to compare with what the service answers. */
const posted = {
  ada: { gross: 0, refunds: 0, count: 0, monthly: Array.from({ length: 12 }, () => 0) },
  bo: { gross: 0, refunds: 0, count: 0, monthly: Array.from({ length: 12 }, () => 0) },
};

beforeAll(async () => {
  s = await startStack({
    services: ["ledger", "webhooks", "tax"],
    serviceEnv: {
      ...LOOPBACK_WEBHOOKS_ENV,
      tax: { PII_KEYS: generateKeyRingEntry("tin1"), TAX_PAYER_NAME: "Test Marketplace Inc", TAX_PAYER_TIN: "521234567" },
    },
  });
  poster = ledgerPoster(await s.env.nats(), s.env.prefix, s.orgId);
  receiver = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      deliveries.push(JSON.parse(body) as { type: string; data: Record<string, unknown> });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const events = ["tax.document.generated", "tax.document.filed", "tax.document.corrected"];
  expect((await api("POST", "/v1/webhooks", s.testKey, { action: "create", url, events })).status).toBe(201);

  for (const id of ["ada", "bo", "cy", "dee"]) expect((await api("POST", "/v1/participants", s.testKey, { participant_id: id })).status).toBe(201);
  // Ada: a sale every month of the year, a refund in July, and activity outside the year that must not count.
  for (let m = 0; m < 12; m++) {
    const gross = 15_000 + m * 101;
    await poster.sale("ada", `ada-${m}`, gross, `${YEAR}-${String(m + 1).padStart(2, "0")}-15T12:00:00Z`);
    posted.ada.gross += gross;
    posted.ada.count += 1;
    posted.ada.monthly[m] = gross;
  }
  await poster.refund("ada-6", 5_000, `${YEAR}-07-20`);
  posted.ada.refunds += 5_000;
  await poster.sale("ada", "ada-prior", 99_999, `${YEAR - 1}-12-31T23:59:59Z`);
  await poster.refund("ada-11", 1_000, `${YEAR + 1}-01-01T00:00:00Z`);
  // Bo: six sales in the first half, two refunds of one of them.
  for (let m = 0; m < 6; m++) {
    await poster.sale("bo", `bo-${m}`, 30_000, `${YEAR}-${String(m + 1).padStart(2, "0")}-03`);
    posted.bo.gross += 30_000;
    posted.bo.count += 1;
    posted.bo.monthly[m] = 30_000;
  }
  await poster.refund("bo-2", 2_500, `${YEAR}-03-10`);
  await poster.refund("bo-2", 2_500, `${YEAR}-04-10`);
  posted.bo.refunds += 5_000;
  // Cy: under the threshold. Dee: only sales in another year.
  await poster.sale("cy", "cy-0", 10_000, `${YEAR}-05-05`);
  await poster.sale("cy", "cy-1", 10_000, `${YEAR}-06-05`);
  await poster.sale("dee", "dee-0", 500_000, `${YEAR - 1}-06-05`);
  // The org reports 1099-K over $1,000 and more than 3 transactions (the federal $20,000 / 200 would report nobody here).
  const settings = await api("PUT", "/v1/tax/settings", s.testKey, { tax_year: YEAR, form: "1099-K", threshold_cents: 100_000, threshold_transactions: 3 });
  expect(settings.status).toBe(200);
}, 120_000);
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await s?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const profile = (tinType: string, tin: string, extra: Record<string, unknown> = {}) => ({
  legal_name: "Ada Lovelace",
  tin_type: tinType,
  tin,
  business_type: "individual",
  address: { line1: "12 Analytical Way", city: "Austin", state: "TX", postal_code: "78701" },
  certified: true,
  ...extra,
});

describe("tax profiles", () => {
  it("keeps the TIN sealed and answers its last four digits only", async () => {
    const put = await api("PUT", "/v1/participants/ada/tax-profile", s.testKey, profile("ssn", "401-87-3921", { certified_by: "user_ada" }));
    expect(put.status).toBe(201);
    expect(put.body["tax_profile"]).toMatchObject({ participant_id: "ada", tin_type: "ssn", tin_last4: "3921", certified: true, certified_by: "user_ada" });
    expect(JSON.stringify(put.body)).not.toContain("401873921");
    const again = await api("PUT", "/v1/participants/ada/tax-profile", s.testKey, profile("ssn", "401873921"));
    expect(again.status).toBe(200);
    const bo = profile("ein", "52-7654321", {
      legal_name: "Bo Widgets LLC",
      business_type: "llc",
      address: { line1: "1 Elm St", city: "Denver", state: "CO", postal_code: "80202" },
    });
    expect((await api("PUT", "/v1/participants/bo/tax-profile", s.testKey, bo)).status).toBe(201);
    const got = await api("GET", "/v1/participants/ada/tax-profile", s.testKey);
    expect(got.body["tax_profile"]).toMatchObject({ tin_last4: "3921", certified_at: expect.any(String) });
    expect(JSON.stringify(got.body)).not.toMatch(/401-?87-?3921/);
    const [row] = await s.env.adminSql<{ tin_sealed: string }[]>`select tin_sealed from tax.profiles where participant_id = 'ada'`;
    expect(row?.tin_sealed).toMatch(/^v1\./);
    expect(row?.tin_sealed).not.toContain("3921");
  });

  it("refuses bad TINs with invalid_tin naming the rule, an unknown participant with 404, an uncertified W-9 with 400", async () => {
    const bad: [string, string, RegExp][] = [
      ["ssn", "000-12-3456", /area/],
      ["ssn", "666-12-3456", /area/],
      ["ssn", "912-34-5678", /area/],
      ["ssn", "123-00-4567", /group/],
      ["ssn", "123-45-0000", /serial/],
      ["itin", "912-45-6789", /ITIN/],
      ["itin", "123-70-6789", /ITIN/],
      ["ein", "07-1234567", /prefix/],
      ["ein", "89-1234567", /prefix/],
      ["ssn", "12345", /9 digits/],
      ["ssn", "1234567890", /9 digits/],
    ];
    for (const [type, tin, why] of bad) {
      const r = await api("PUT", "/v1/participants/cy/tax-profile", s.testKey, profile(type, tin));
      expect([type, tin, r.status, r.body["error_code"]]).toEqual([type, tin, 400, "invalid_tin"]);
      expect(JSON.stringify(r.body["details"])).toMatch(why);
      expect(JSON.stringify(r.body)).not.toContain(tin.replace(/-/g, "").slice(0, 7));
    }
    const unknown = await api("PUT", "/v1/participants/nobody/tax-profile", s.testKey, profile("ssn", "401-87-3921"));
    expect([unknown.status, unknown.body["error_code"]]).toEqual([404, "participant_not_found"]);
    const uncertified = await api("PUT", "/v1/participants/cy/tax-profile", s.testKey, profile("ssn", "401-87-3921", { certified: false }));
    expect([uncertified.status, uncertified.body["error_code"]]).toEqual([400, "validation_error"]);
    expect((await api("GET", "/v1/participants/cy/tax-profile", s.testKey)).body["error_code"]).toBe("tax_profile_not_found");
  });
});

describe("calculations", () => {
  it("equal the ledger's figures of the year to the cent, with the form that applies and the profile's status", async () => {
    const ada = await api("GET", `/v1/tax/calculations/ada?tax_year=${YEAR}`, s.testKey);
    expect(ada.status).toBe(200);
    expect(ada.body["calculation"]).toEqual({
      participant_id: "ada",
      tax_year: YEAR,
      gross_payments_cents: posted.ada.gross,
      refunds_cents: posted.ada.refunds,
      transaction_count: 12,
      monthly_cents: posted.ada.monthly,
      form: "1099-K",
      meets_threshold: true,
      profile_status: "certified",
    });
    const cy = await api("GET", `/v1/tax/calculations/cy?tax_year=${YEAR}`, s.testKey);
    expect(cy.body["calculation"]).toMatchObject({
      gross_payments_cents: 20_000,
      transaction_count: 2,
      form: "none",
      meets_threshold: false,
      profile_status: "missing",
    });
    const dee = await api("GET", `/v1/tax/calculations/dee?tax_year=${YEAR}`, s.testKey);
    expect(dee.body["calculation"]).toMatchObject({ gross_payments_cents: 0, transaction_count: 0, form: "none" });
    const future = await api("GET", `/v1/tax/calculations/ada?tax_year=2099`, s.testKey);
    expect([future.status, future.body["error_code"]]).toEqual([400, "invalid_tax_year"]);
    const ancient = await api("GET", `/v1/tax/calculations/ada?tax_year=1999`, s.testKey);
    expect([ancient.status, ancient.body["error_code"]]).toEqual([400, "invalid_tax_year"]);
    const unknown = await api("GET", `/v1/tax/calculations/nobody?tax_year=${YEAR}`, s.testKey);
    expect([unknown.status, unknown.body["error_code"]]).toEqual([404, "participant_not_found"]);
  });

  it("uses the federal figures of a year the org did not set", async () => {
    const r = await api("GET", `/v1/tax/settings?tax_year=2026`, s.testKey);
    expect(r.body["tax_settings"]).toEqual({
      tax_year: 2026,
      form: "1099-K",
      threshold_cents: 2_000_000,
      threshold_transactions: 200,
      source: "federal_default",
    });
    const nec = await api("PUT", "/v1/tax/settings", s.testKey, { tax_year: 2024, form: "1099-NEC" });
    expect(nec.body["tax_settings"]).toEqual({ tax_year: 2024, form: "1099-NEC", threshold_cents: 60_000, threshold_transactions: null, source: "org" });
    const bad = await api("PUT", "/v1/tax/settings", s.testKey, { tax_year: 2024, form: "1099-NEC", threshold_transactions: 5 });
    expect([bad.status, bad.body["error_code"]]).toEqual([400, "validation_error"]);
  });
});

interface Doc {
  id: string;
  status: string;
  participant_id: string;
  amounts: { box_1a_cents: number; box_3_transactions: number; box_5_cents: number[]; gross_payments_cents: number; refunds_cents: number };
  recipient_tin_last4: string | null;
  corrects_document_id: string | null;
  corrected_by_document_id: string | null;
  sources?: { transaction_id: string; role: string; amount_cents: number; accounted_at: string }[];
}
const docs: Record<string, Doc> = {};

describe("documents", () => {
  it("generates one document per participant over the threshold, and again still the same two", async () => {
    const future = await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: 2099 });
    expect([future.status, future.body["error_code"]]).toEqual([400, "invalid_tax_year"]);
    const first = await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: YEAR });
    expect(first.status).toBe(200);
    expect(first.body["generation"]).toMatchObject({ tax_year: YEAR, created: 2, updated: 0 });
    const second = await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: YEAR });
    expect(second.body["generation"]).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
    const list = await api("GET", `/v1/tax/documents?tax_year=${YEAR}`, s.testKey);
    expect(list.body["total"]).toBe(2);
    for (const d of list.body["tax_documents"] as Doc[]) docs[d.participant_id] = d;
    expect(Object.keys(docs).sort()).toEqual(["ada", "bo"]);
    expect(docs["ada"]).toMatchObject({
      id: expect.stringMatching(/^taxdoc_/),
      status: "draft",
      recipient_tin_last4: "3921",
      amounts: { box_1a_cents: posted.ada.gross, box_3_transactions: 12, box_5_cents: posted.ada.monthly, refunds_cents: posted.ada.refunds },
    });
    expect(docs["bo"]?.amounts).toMatchObject({ box_1a_cents: posted.bo.gross, refunds_cents: posted.bo.refunds });
    await waitFor(() => deliveries.filter((d) => d.type === "tax.document.generated").length === 2, { timeoutMs: 20_000 });
  });

  it("answers the ledger transactions behind each document, summing to its amounts", async () => {
    for (const who of ["ada", "bo"] as const) {
      const r = await api("GET", `/v1/tax/documents/${docs[who]?.id}?include=sources`, s.testKey);
      const d = r.body["tax_document"] as Doc;
      const sum = (role: string) => (d.sources ?? []).filter((x) => x.role === role).reduce((n, x) => n + x.amount_cents, 0);
      expect(sum("sale")).toBe(d.amounts.box_1a_cents);
      expect(sum("refund")).toBe(d.amounts.refunds_cents);
      expect((d.sources ?? []).filter((x) => x.role === "sale")).toHaveLength(posted[who].count);
      for (const x of d.sources ?? []) expect(x.accounted_at.slice(0, 4)).toBe(String(YEAR));
      expect(sourcesAreTransactions(d)).toBe(true);
    }
    const none = await api("GET", "/v1/tax/documents/taxdoc_nothere", s.testKey);
    expect([none.status, none.body["error_code"]]).toEqual([404, "tax_document_not_found"]);
  });

  it("renders the recipient copy: a PDF that rasterises and reads back with the amounts and the TIN's last four only", async () => {
    const res = await fetchRaw(`/v1/tax/documents/${docs["ada"]?.id}/pdf`, s.testKey);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 5).toString()).toBe("%PDF-");
    const pdf = join(scratch, "ada.pdf");
    writeFileSync(pdf, bytes);
    execFileSync("pdftoppm", ["-png", "-r", "60", "-singlefile", pdf, join(scratch, "ada")]);
    const png = readFileSync(join(scratch, "ada.png"));
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(png.readUInt32BE(16)).toBeGreaterThan(400); // width of a letter page at 60 dpi: 510
    const text = execFileSync("pdftotext", ["-layout", pdf, "-"]).toString();
    expect(text).toContain(`Form 1099-K ${YEAR}`);
    expect(text).toContain("Ada Lovelace");
    expect(text).toContain("***-**-3921");
    expect(text).toContain(dollars(posted.ada.gross));
    expect(text).toContain(dollars(posted.ada.monthly[11] ?? 0));
    expect(text).toContain("Test Marketplace Inc");
    expect(text.replace(/\D/g, "")).not.toContain("401873921");
  });

  it("marks a draft filed, then corrects it into a new document linked to the original", async () => {
    const ada = docs["ada"] as Doc;
    const draftCorrect = await api("POST", `/v1/tax/documents/${ada.id}/correct`, s.testKey, {});
    expect([draftCorrect.status, draftCorrect.body["error_code"]]).toEqual([409, "tax_document_state"]);
    const filed = await api("POST", `/v1/tax/documents/${ada.id}/mark-filed`, s.testKey);
    expect(filed.body["tax_document"]).toMatchObject({ status: "filed", filed_at: expect.any(String) });
    const twice = await api("POST", `/v1/tax/documents/${ada.id}/mark-filed`, s.testKey);
    expect([twice.status, twice.body["error_code"]]).toEqual([409, "tax_document_state"]);
    // A sale recorded late in the year's books: generation leaves the filed document; a correction carries it.
    await poster.sale("ada", "ada-late", 7_700, `${YEAR}-12-30`);
    const regen = await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: YEAR });
    expect(regen.body["generation"]).toMatchObject({ created: 0, filed: 1 });
    const corrected = await api("POST", `/v1/tax/documents/${ada.id}/correct`, s.testKey, { reason: "late December sale" });
    expect(corrected.status).toBe(201);
    const next = corrected.body["tax_document"] as Doc;
    expect(next).toMatchObject({ status: "draft", corrects_document_id: ada.id, amounts: { box_1a_cents: posted.ada.gross + 7_700, box_3_transactions: 13 } });
    expect(next.id).not.toBe(ada.id);
    expect(corrected.body["original_document"]).toMatchObject({ id: ada.id, status: "corrected", corrected_by_document_id: next.id });
    const original = await api("GET", `/v1/tax/documents/${ada.id}`, s.testKey);
    expect(original.body["tax_document"]).toMatchObject({
      status: "corrected",
      corrected_by_document_id: next.id,
      amounts: { box_1a_cents: posted.ada.gross },
    });
    posted.ada.gross += 7_700;
    posted.ada.count += 1;
    posted.ada.monthly[11] = (posted.ada.monthly[11] ?? 0) + 7_700;
    docs["ada"] = next;
    const again = await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: YEAR });
    expect(again.body["generation"]).toMatchObject({ created: 0, unchanged: 2 });
    await waitFor(() => deliveries.some((d) => d.type === "tax.document.corrected"), { timeoutMs: 20_000 });
    expect(deliveries.find((d) => d.type === "tax.document.filed")?.data).toMatchObject({ tax_document: { id: ada.id, status: "filed" } });
    expect(deliveries.find((d) => d.type === "tax.document.corrected")?.data).toMatchObject({
      tax_document: { id: next.id, corrects_document_id: ada.id },
      original_document: { id: ada.id, status: "corrected" },
    });
    // A running year is drafted with its figures so far, and filed only once it has ended.
    const running = new Date().getUTCFullYear();
    await poster.sale("cy", "cy-running", 5_000, `${running}-01-02`);
    await api("PUT", "/v1/tax/settings", s.testKey, { tax_year: running, form: "1099-K", threshold_cents: 0, threshold_transactions: 0 });
    expect((await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: running })).body["generation"]).toMatchObject({ created: 1 });
    const draft = ((await api("GET", `/v1/tax/documents?tax_year=${running}`, s.testKey)).body["tax_documents"] as Doc[])[0];
    const early = await api("POST", `/v1/tax/documents/${draft?.id}/mark-filed`, s.testKey);
    expect([early.status, early.body["error_code"]]).toEqual([422, "tax_year_not_ended"]);
  });

  it("counts a sale's reversal as a refund and a refund's reversal against refunds, and the sources still sum", async () => {
    // Proves the reversal branches of the ledger's figures, with reversals made through the public API.
    const running = new Date().getUTCFullYear();
    const sale = await poster.sale("cy", "cy-running2", 8_000, `${running}-01-03`);
    const refund = await poster.refund("cy-running2", 1_000, `${running}-01-04`);
    const reverse = (transaction_id: string) => api("POST", "/v1/reverse-transaction", s.testKey, { transaction_id, reason: "tax e2e" });
    expect((await reverse(refund)).status).toBe(201);
    expect((await reverse(sale)).status).toBe(201);
    const calc = await api("GET", `/v1/tax/calculations/cy`, s.testKey);
    // Gross 5,000 + 8,000; refunds: the 1,000 refund, less its reversal, plus the sale's reversal of 8,000.
    expect(calc.body["calculation"]).toMatchObject({ tax_year: running, gross_payments_cents: 13_000, refunds_cents: 8_000, transaction_count: 2 });
    expect((await api("POST", "/v1/tax/documents/generate", s.testKey, { tax_year: running })).body["generation"]).toMatchObject({ updated: 1 });
    const draft = ((await api("GET", `/v1/tax/documents?tax_year=${running}`, s.testKey)).body["tax_documents"] as Doc[])[0];
    const d = (await api("GET", `/v1/tax/documents/${draft?.id}?include=sources`, s.testKey)).body["tax_document"] as Doc;
    const sum = (role: string) => (d.sources ?? []).filter((x) => x.role === role).reduce((n, x) => n + x.amount_cents, 0);
    expect([sum("sale"), sum("refund")]).toEqual([13_000, 8_000]);
    expect((d.sources ?? []).map((x) => x.amount_cents).sort((a, b) => a - b)).toEqual([-1_000, 1_000, 5_000, 8_000, 8_000]);
    const summary = await api("GET", `/v1/tax/summaries/${YEAR}`, s.testKey);
    expect(summary.body["summary"]).toMatchObject({ tax_year: YEAR, documents: 2, reported_cents: posted.ada.gross + posted.bo.gross });
  });
});

describe("exports", () => {
  it("writes a FIRE file that an independent reader of Publication 1220 parses back with the right totals", async () => {
    const res = await fetchRaw(`/v1/tax/documents/export?tax_year=${YEAR}&format=fire`, s.testKey);
    expect(res.status).toBe(200);
    const file = await res.text();
    const records = readFire(file);
    // Bo's Colorado is in the Combined Federal/State program (a K record), Ada's Texas is not.
    expect(records.map((r) => r.type).join("")).toBe("TABBCKF");
    const [t, a, b1, b2, c, k, f] = records as [ReturnType<typeof readFire>[number], ...ReturnType<typeof readFire>];
    expect(t.at(2, 5)).toBe(String(YEAR));
    expect(t.at(28, 28)).toBe("T"); // a sandbox file is a test file
    expect(t.num(296, 303)).toBe(2);
    expect(a?.at(26, 27)).toBe("MC");
    expect(a?.at(12, 20)).toBe("521234567");
    expect(a?.at(28, 45).trim()).toBe("156789ABCDEFG");
    const byTin = new Map([b1, b2].map((b) => [b?.at(12, 20), b]));
    const ada = byTin.get("401873921");
    const bo = byTin.get("527654321");
    expect(ada?.at(11, 11)).toBe("2");
    expect(bo?.at(11, 11)).toBe("1");
    expect(ada?.at(6, 6)).toBe("G"); // the correcting document
    expect(ada && bAmount(ada, "1")).toBe(posted.ada.gross);
    expect(ada && bAmount(ada, "G")).toBe(posted.ada.monthly[11]);
    expect(ada?.at(288, 327).trim()).toBe("ADA LOVELACE");
    expect(ada?.num(549, 561)).toBe(13);
    expect(bo && bAmount(bo, "1")).toBe(posted.bo.gross);
    expect(bo && bAmount(bo, "A")).toBe(posted.bo.monthly[5]);
    expect(c?.num(2, 9)).toBe(2);
    for (const code of ["1", "5", "6", "A", "G"]) expect(c && controlTotal(c, code)).toBe((ada ? bAmount(ada, code) : 0) + (bo ? bAmount(bo, code) : 0));
    expect(k?.num(2, 9)).toBe(1);
    expect(k?.at(747, 748)).toBe("07");
    expect(k && controlTotal(k, "1")).toBe(posted.bo.gross);
    expect(bo?.at(747, 748)).toBe("07");
    expect(ada?.at(747, 748)).toBe("  ");
    expect(f?.num(2, 9)).toBe(1);
    expect(f?.num(50, 57)).toBe(2);
    expect(records.map((r) => r.num(500, 507))).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("exports CSV and JSON with the TIN's last four only", async () => {
    const csv = await (await fetchRaw(`/v1/tax/documents/export?tax_year=${YEAR}&format=csv`, s.testKey)).text();
    const lines = csv.trim().split("\r\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^document_id,tax_year,form,status,participant_id/);
    expect(csv).toContain(`,${posted.ada.gross},`);
    expect(csv).not.toContain("401873921");
    const json = (await api("GET", `/v1/tax/documents/export?tax_year=${YEAR}&format=json`, s.testKey)).body as { tax_documents: Doc[]; tax_year: number };
    expect(json.tax_year).toBe(YEAR);
    expect(json.tax_documents.map((d) => d.participant_id).sort()).toEqual(["ada", "bo"]);
  });
});

describe("scope and isolation", () => {
  it("refuses tax operations to a key without the accounting or creators scope", async () => {
    const readOnly = (await s.key({ scopes: ["read", "payments", "payouts", "webhooks"] })).api_key;
    for (const [method, path, body] of [
      ["GET", `/v1/tax/documents?tax_year=${YEAR}`, undefined],
      ["GET", `/v1/tax/documents/${docs["ada"]?.id}/pdf`, undefined],
      ["POST", "/v1/tax/documents/generate", { tax_year: YEAR }],
      ["GET", `/v1/tax/calculations/ada?tax_year=${YEAR}`, undefined],
      ["GET", "/v1/participants/ada/tax-profile", undefined],
      ["PUT", "/v1/participants/ada/tax-profile", profile("ssn", "401-87-3921")],
    ] as const) {
      const r = await api(method, path, readOnly, body);
      expect([method, path, r.status, r.body["error_code"]]).toEqual([method, path, 403, "insufficient_scope"]);
    }
  });

  it("shows another org and the live environment nothing of this sandbox's tax data", async () => {
    const { org_id } = await createOrg(s.env.adminSql, { name: `Other ${Date.now().toString(36)}` });
    const other = (await s.key({ orgId: org_id })).api_key;
    for (const key of [other, s.liveKey]) {
      expect((await api("GET", `/v1/tax/documents/${docs["ada"]?.id}`, key)).status).toBe(404);
      expect((await api("GET", `/v1/tax/documents?tax_year=${YEAR}`, key)).body["total"]).toBe(0);
      expect((await api("GET", "/v1/participants/ada/tax-profile", key)).status).toBe(404);
      expect((await api("POST", `/v1/tax/documents/${docs["bo"]?.id}/mark-filed`, key)).status).toBe(404);
      expect((await api("GET", `/v1/tax/summaries/${YEAR}`, key)).body["error_code"]).toBe("tax_summary_not_found");
    }
    const gen = await api("POST", "/v1/tax/documents/generate", other, { tax_year: YEAR });
    expect(gen.body["generation"]).toMatchObject({ participants_read: 0, created: 0 });
  });
});

function dollars(cents: number): string {
  return `$${Math.floor(cents / 100).toLocaleString("en-US")}.${String(cents % 100).padStart(2, "0")}`;
}

function sourcesAreTransactions(d: Doc): boolean {
  return (d.sources ?? []).every((x) => /^txn_/.test(x.transaction_id));
}
