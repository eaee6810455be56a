// Proves bank imports, reconciliation and the report reads black-box through the gateway: every test-data
// statement imported with its figures and de-duplicated, bad input as an envelope with a precise code and
// nothing written, the 1 MiB body limit, scopes, a reconciliation round trip and the GET reports.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IMPORT_BODY_LIMIT_BYTES, RPC_ENVELOPE_BYTES_MAX } from "@treasury/contracts";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { fixtureBody, FIXTURES } from "../../services/ledger/src/statement-parser/testing/import-fixtures.ts";
import { verifyLedger } from "../../services/ledger/src/verify/verify.ts";
import { call, startStack, type Stack } from "./stack.ts";

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ services: ["ledger"] });
});
afterAll(async () => {
  await stack?.stop();
});

const post = (path: string, body: unknown, key = stack.testKey) => call(stack.baseUrl, "POST", path, { key, body });
const get = (path: string, key = stack.testKey) => call(stack.baseUrl, "GET", path, { key });

async function storedLines(orgId = stack.orgId): Promise<number> {
  const [r] = await stack.env.adminSql<{ n: string }[]>`select count(*) as n from ledger.bank_lines where org_id = ${orgId}`;
  return Number(r?.n ?? 0);
}

function expectEnvelope(r: { status: number; body: Record<string, unknown> }, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(status);
  expect(r.body).toMatchObject({ success: false, error_code: code, error: expect.any(String), request_id: expect.stringMatching(/^req_/) });
}

describe("import-transactions over HTTP", () => {
  it("imports every test-data statement with its figures; a second import adds nothing", async () => {
    // Proves the wire shapes of parse_preview and import for all six formats. Each file goes to an org of its
    // own: some files repeat another's lines (camt.053 v2/v4, BAI2 samples 4 and 5), which one org stores once.
    for (const f of FIXTURES) {
      const org = await createOrg(stack.env.adminSql, { name: f.path });
      const key = (await stack.key({ orgId: org.org_id })).api_key;
      const preview = await post("/v1/import-transactions", fixtureBody(f, "parse_preview"), key);
      expect(preview.status, f.path).toBe(200);
      const p = preview.body["preview"] as { format: string; line_count: number; statements: { totals: { net: number } }[] };
      expect([f.path, p.format, p.line_count]).toEqual([f.path, f.format, f.lines]);
      if (f.net !== null)
        expect(
          p.statements.reduce((s, st) => s + st.totals.net, 0),
          f.path,
        ).toBe(f.net);
      const first = await post("/v1/import-transactions", fixtureBody(f, "import"), key);
      expect(first.status, f.path).toBe(201);
      expect(first.body).toMatchObject({ success: true, import: { imported: f.lines, duplicates: 0, error_count: 0 } });
      const again = await post("/v1/import-transactions", fixtureBody(f, "import"), key);
      expect(again.body["import"], f.path).toMatchObject({ imported: 0, duplicates: f.lines });
      expect(await storedLines(org.org_id), f.path).toBe(f.lines);
    }
  });

  it("bad input is a 400 envelope with a precise code and writes nothing; over 1 MiB is 413", async () => {
    // Proves each failure reaches the client as the error envelope, never a 5xx, and leaves no rows.
    const before = await storedLines();
    const csv = "Date,Amount\n2024-01-01,1.00\n2024-01-02,x\n";
    const mapping = { date: "Date", amount: "Amount", currency: "USD" };
    const bad = await post("/v1/import-transactions", { action: "import", format: "csv", data: csv, mapping });
    expectEnvelope(bad, 400, "unparseable_statement");
    expect(bad.body["details"]).toEqual([{ path: "data", message: expect.stringMatching(/^line 3: /) }]);
    expectEnvelope(await post("/v1/import-transactions", { action: "import", data: "" }), 400, "empty_statement");
    expectEnvelope(
      await post("/v1/import-transactions", {
        action: "import",
        data: Buffer.from([0x50, 0x4b, 3, 4, 0, 0, 8, 0]).toString("base64"),
        data_encoding: "base64",
      }),
      400,
      "binary_statement",
    );
    expectEnvelope(
      await post("/v1/import-transactions", { action: "import", format: "csv", data: csv, mapping: { ...mapping, amount: "Betrag" } }),
      400,
      "mapping_column_not_found",
    );
    expectEnvelope(await post("/v1/import-transactions", { action: "import", data: csv }), 400, "mapping_required");
    expectEnvelope(await post("/v1/import-transactions", { action: "import", format: "xls", data: csv }), 400, "validation_error");
    expectEnvelope(await post("/v1/import-transactions", { action: "import", data: csv, template_id: "tmpl_nope" }), 404, "template_not_found");
    const tooBig = JSON.stringify({ action: "parse_preview", format: "csv", data: "x".repeat(IMPORT_BODY_LIMIT_BYTES) });
    const big = await call(stack.baseUrl, "POST", "/v1/import-transactions", {
      key: stack.testKey,
      rawBody: tooBig,
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(big, 413, "payload_too_large");
    // At the edge: the largest accepted body reaches the ledger (here: no mapping); a few bytes under 1 MiB is 413.
    const sized = (bytes: number) => {
      const head = JSON.stringify({ action: "parse_preview", format: "csv", data: "a,b\n" });
      return JSON.stringify({ action: "parse_preview", format: "csv", data: `a,b\n${"x".repeat(bytes - head.length)}` });
    };
    const largest = sized(IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX);
    const accepted = await call(stack.baseUrl, "POST", "/v1/import-transactions", {
      key: stack.testKey,
      rawBody: largest,
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(accepted, 400, "mapping_required");
    const nearly = await call(stack.baseUrl, "POST", "/v1/import-transactions", {
      key: stack.testKey,
      rawBody: sized(IMPORT_BODY_LIMIT_BYTES - 10),
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(nearly, 413, "payload_too_large");
    expect(await storedLines()).toBe(before);
  });

  it("a statement close to the 1 MiB limit is read and imported", async () => {
    // Proves the largest bodies the gateway accepts travel to the ledger and back (not only small files).
    const rows: string[] = [];
    let size = 0;
    // Each row's line break is two characters in JSON ("\\n"); the mapping and the rest take well under 1 KiB.
    for (let i = 0; size < IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX - 1024; i++) {
      const row = `2023-${String(1 + (i % 12)).padStart(2, "0")}-${String(1 + (i % 28)).padStart(2, "0")},Big ${i},B${i},${(i % 5000) + 1}.${String(i % 100).padStart(2, "0")}\n`;
      rows.push(row);
      size += row.length + 1;
    }
    const body = {
      action: "import",
      format: "csv",
      data: `Date,Description,Reference,Amount\n${rows.join("")}`,
      mapping: { date: "Date", description: "Description", reference: "Reference", amount: "Amount", currency: "USD" },
    };
    expect(JSON.stringify(body).length).toBeGreaterThan(IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX - 1200);
    expect(JSON.stringify(body).length).toBeLessThanOrEqual(IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX);
    const r = await post("/v1/import-transactions", body);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(201);
    expect(r.body["import"]).toMatchObject({ imported: rows.length, duplicates: 0 });
    const preview = await post("/v1/import-transactions", { ...body, action: "parse_preview" });
    expect(preview.body["preview"]).toMatchObject({ line_count: rows.length });
    expect(((preview.body["preview"] as { statements: { lines: unknown[] }[] }).statements[0]?.lines ?? []).length).toBe(1000);
  });

  it("imports and reconciliation writes need the accounting scope; reads need read", async () => {
    // Proves fail-closed scopes on the new operations.
    const read = (await stack.key({ scopes: ["read"] })).api_key;
    expectEnvelope(await post("/v1/import-transactions", { action: "get_templates" }, read), 403, "insufficient_scope");
    expectEnvelope(await post("/v1/reconciliations/auto-match", {}, read), 403, "insufficient_scope");
    expectEnvelope(await post("/v1/reconciliations/matches", { bank_line_id: "bl_x", transaction_id: "txn_x" }, read), 403, "insufficient_scope");
    expect((await get("/v1/reconciliations/unmatched?limit=1", read)).status).toBe(200);
    expect((await get("/v1/trial-balance", read)).status).toBe(200);
    const accounting = (await stack.key({ scopes: ["accounting"] })).api_key;
    expect((await post("/v1/import-transactions", { action: "get_templates" }, accounting)).body).toMatchObject({ success: true, templates: [] });
  });
});

describe("reconciliation and reports over HTTP", () => {
  it("auto-matches a statement of the ledger's activity, unmatches by POST …/delete, and lists what is left", async () => {
    // Proves the reconciliation routes end to end and that the report reads agree with generate-report.
    // An org of its own, so the statement meets only this test's ledger activity.
    const org = await createOrg(stack.env.adminSql, { name: "Reconciling" });
    const own = (await stack.key({ orgId: org.org_id })).api_key;
    const lines: string[] = [];
    for (let i = 0; i < 12; i++) {
      const amount = 5_000 + i * 11;
      const income = i % 4 !== 0;
      const r = await post(
        income ? "/v1/record-income" : "/v1/record-expense",
        { reference_id: `rec-${i}`, amount, date: `2024-07-${String(10 + i).padStart(2, "0")}` },
        own,
      );
      expect(r.status).toBe(201);
      lines.push(`2024-07-${String(10 + i + (i % 2)).padStart(2, "0")},Transfer rec-${i},rec-${i},${income ? "" : "-"}${amount / 100}`);
    }
    lines.push("2024-07-15,Bank fee,FEE1,-4.99");
    const imported = await post(
      "/v1/import-transactions",
      {
        action: "import",
        format: "csv",
        data: `Date,Text,Ref,Amount\n${lines.join("\n")}\n`,
        mapping: { date: "Date", description: "Text", reference: "Ref", amount: "Amount", currency: "USD" },
      },
      own,
    );
    expect(imported.body["import"]).toMatchObject({ imported: 13 });

    const auto = await post("/v1/reconciliations/auto-match", { start_date: "2024-07-01", end_date: "2024-07-31" }, own);
    expect(auto.status).toBe(200);
    expect(auto.body["auto_match"]).toMatchObject({ matched: 12, unmatched_bank_lines: 1, unmatched_transactions: 0 });
    const first = (auto.body["auto_match"] as { matches: { id: string; transaction_id: string }[] }).matches[0];
    if (first === undefined) throw new Error("no match listed");
    const left = await get("/v1/reconciliations/unmatched", own);
    expect(left.body).toMatchObject({ success: true, bank_lines_total: 1, transactions_total: 0, limit: 25, offset: 0 });
    expect((left.body["bank_lines"] as { reference: string }[])[0]?.reference).toBe("FEE1");

    const removed = await post(`/v1/reconciliations/matches/${first.id}/delete`, {}, own);
    expect(removed.body).toMatchObject({ success: true, match: { id: first.id, status: "unmatched" } });
    expectEnvelope(await post(`/v1/reconciliations/matches/${first.id}/delete`, {}), 404, "match_not_found");
    expect((await call(stack.baseUrl, "DELETE", `/v1/reconciliations/matches/${first.id}`, { key: own })).status).toBe(404);
    const after = await get("/v1/reconciliations/unmatched?limit=1", own);
    expect(after.body).toMatchObject({ bank_lines_total: 2, transactions_total: 1 });
    const feeLine = ((await get("/v1/reconciliations/unmatched", own)).body["bank_lines"] as { id: string; reference: string }[]).find(
      (l) => l.reference === "FEE1",
    );
    const manual = await post("/v1/reconciliations/matches", { bank_line_id: feeLine?.id, transaction_id: first.transaction_id }, own);
    expect(manual.status).toBe(201);
    expectEnvelope(
      await post("/v1/reconciliations/matches", { bank_line_id: feeLine?.id, transaction_id: first.transaction_id }, own),
      409,
      "bank_line_already_matched",
    );

    const tb = await post("/v1/generate-report", { report_type: "trial_balance", as_of: "2024-07-31" }, own);
    const viaGet = await get("/v1/trial-balance?as_of_date=2024-07-31", own);
    expect(viaGet.body["report"]).toEqual(tb.body["report"]);
    const pl = await post("/v1/generate-report", { report_type: "profit_loss", start_date: "2024-07-01", end_date: "2024-07-31" }, own);
    expect((await get("/v1/profit-loss?start_date=2024-07-01&end_date=2024-07-31", own)).body["report"]).toEqual(pl.body["report"]);
    const bs = await post("/v1/generate-report", { report_type: "balance_sheet", as_of: "2024-07-20" }, own);
    expect((await get("/v1/balance-sheet?as_of_date=2024-07-20", own)).body["report"]).toEqual(bs.body["report"]);
    expectEnvelope(await get("/v1/trial-balance?as_of_date=yesterday", own), 400, "validation_error");
    const history = await post(
      "/v1/generate-report",
      { report_type: "transaction_history", start_date: "2024-07-01", end_date: "2024-07-31", per_page: 5 },
      own,
    );
    expect(history.body["report"]).toMatchObject({ type: "transaction_history", pagination: { total: 12, per_page: 5, total_pages: 3 } });
    const report = await verifyLedger(stack.env.adminSql, { orgId: org.org_id });
    expect(report.violations).toEqual([]);
  });
});
