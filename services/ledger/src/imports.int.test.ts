// Proves import-transactions through real RPC on PostgreSQL: every test-data statement imported with its
// published figures and de-duplicated on a second import (also when imported concurrently), templates per org
// and environment, bad input answered with a precise code while nothing is written, and statements read off
// the event loop: pathological ones answered within the parse budget while postings keep being answered.
import { IMPORT_BODY_LIMIT_BYTES, RPC_ENVELOPE_BYTES_MAX, type AuthContext, type RpcReply } from "@treasury/contracts";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pathologicalStatements } from "../../../libs/bank-statements/src/testing/pathological.ts";
import { fixture, fixtureBody, FIXTURES } from "./statement-parser/testing/import-fixtures.ts";
import { StatementParserPool } from "./statement-parser/pool.ts";
import { LedgerEnv } from "./config.ts";
import { ENDLESS_STATEMENT, ENDLESS_WORKER_URL } from "./statement-parser/testing/endless.ts";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";
import { createWallet } from "./usecases/wallets.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

const imp = (auth: AuthContext, body: Record<string, unknown>) => h.call("importTransactions", auth, { body });

async function rowsOf(auth: AuthContext): Promise<{ lines: number; net: number; imports: number }> {
  const [r] = await h.env.adminSql<{ lines: string; net: string | null; imports: string }[]>`
    select (select count(*) from ledger.bank_lines where org_id = ${auth.org_id} and livemode = ${auth.livemode}) as lines,
      (select sum(amount) from ledger.bank_lines where org_id = ${auth.org_id} and livemode = ${auth.livemode}) as net,
      (select count(*) from ledger.bank_imports where org_id = ${auth.org_id} and livemode = ${auth.livemode}) as imports`;
  return { lines: Number(r?.lines ?? 0), net: Number(r?.net ?? 0), imports: Number(r?.imports ?? 0) };
}

function body(reply: RpcReply, key: string): Record<string, unknown> {
  return ok(reply).body[key] as Record<string, unknown>;
}

describe("import-transactions on every test-data statement", () => {
  it.each(FIXTURES)("$path: preview and import give the published figures; a second import adds nothing", async (f) => {
    // Proves the exact figures per file, lines stored once, and the duplicate count of a repeated import.
    const auth = authFor(newOrg());
    const preview = body(await imp(auth, fixtureBody(f, "parse_preview")), "preview");
    expect(preview).toMatchObject({ format: f.format, statement_count: f.statements, line_count: f.lines });
    const statements = preview["statements"] as {
      line_count: number;
      totals: { net: number };
      closing_balance: { amount: number } | null;
      lines: { line_no: number }[];
    }[];
    if (f.net !== null) expect(statements.reduce((s, st) => s + st.totals.net, 0)).toBe(f.net);
    if (f.closing) expect(statements.map((s) => s.closing_balance?.amount ?? null)).toEqual(f.closing);
    for (const st of statements) for (const l of st.lines) expect(l.line_no).toBeGreaterThan(0);
    expect(await rowsOf(auth)).toEqual({ lines: 0, net: 0, imports: 0 });

    const first = ok(await imp(auth, fixtureBody(f, "import")));
    expect(first.status).toBe(201);
    expect(first.body["import"]).toMatchObject({ format: f.format, imported: f.lines, duplicates: 0, error_count: 0, errors: [] });
    const stored = await rowsOf(auth);
    expect(stored.lines).toBe(f.lines);
    if (f.net !== null) expect(stored.net).toBe(f.net);

    const again = body(await imp(auth, fixtureBody(f, "import")), "import");
    expect(again).toMatchObject({ imported: 0, duplicates: f.lines });
    expect((again["duplicate_lines"] as number[]).length).toBe(f.lines);
    expect(await rowsOf(auth)).toMatchObject({ lines: f.lines, imports: 2 });
  });
});

describe("import-transactions behaviour", () => {
  const CSV = "Date,Description,Reference,Amount\n2024-03-01,Coffee,R1,-3.50\n2024-03-01,Coffee,R2,-3.50\n2024-03-02,Refund,,12.00\n2024-03-02,Refund,,12.00\n";
  const MAPPING = { date: "Date", amount: "Amount", description: "Description", reference: "Reference", currency: "EUR" };

  it("concurrent imports of one file add each line once; equal lines without references both count", async () => {
    // Proves the unique index arbitrates concurrent imports, and equal unreferenced lines stay distinct.
    const auth = authFor(newOrg());
    const replies = await Promise.all(
      Array.from({ length: 4 }, () => imp(auth, { action: "import", format: "csv", data: CSV, mapping: MAPPING, account_name: "Main EUR" })),
    );
    const results = replies.map((r) => body(r, "import"));
    expect(results.reduce((n, r) => n + (r["imported"] as number), 0)).toBe(4);
    expect(results.reduce((n, r) => n + (r["duplicates"] as number), 0)).toBe(12);
    expect(await rowsOf(auth)).toEqual({ lines: 4, net: -350 - 350 + 1200 + 1200, imports: 4 });
    const [acct] = await h.env.adminSql`select distinct bank_account from ledger.bank_lines where org_id = ${auth.org_id}`;
    expect(acct?.["bank_account"]).toBe("Main EUR");
  });

  it("templates are saved per org and environment, replaced by name, and read CSV by template_id", async () => {
    // Proves save_template / get_templates and template isolation between orgs and environments.
    const auth = authFor(newOrg());
    const saved = ok(await imp(auth, { action: "save_template", template: { name: "bank-a", mapping: { ...MAPPING, currency: "USD" } } }));
    expect(saved.status).toBe(201);
    const id = (saved.body["template"] as Record<string, unknown>)["id"] as string;
    expect(id).toMatch(/^tmpl_/);
    const replaced = ok(await imp(auth, { action: "save_template", template: { name: "bank-a", mapping: MAPPING, description: "EUR export" } }));
    expect(replaced.status).toBe(200);
    expect(replaced.body["template"]).toMatchObject({ id, created: false, description: "EUR export", mapping: MAPPING });
    const list = ok(await imp(auth, { action: "get_templates" })).body["templates"] as Record<string, unknown>[];
    expect(list.map((t) => [t["id"], t["name"]])).toEqual([[id, "bank-a"]]);

    const viaTemplate = body(await imp(auth, { action: "import", data: CSV, template_id: id }), "import");
    expect(viaTemplate).toMatchObject({ format: "csv", imported: 4 });
    expect(err(await imp(authFor(newOrg()), { action: "import", data: CSV, template_id: id })).code).toBe("template_not_found");
    expect(err(await imp(authFor(auth.org_id, true), { action: "parse_preview", data: CSV, template_id: id })).code).toBe("template_not_found");
    expect(ok(await imp(authFor(auth.org_id, true), { action: "get_templates" })).body["templates"]).toEqual([]);
    expect(err(await imp(auth, { action: "save_template", template: { name: "bad", mapping: { date: "Date" } } })).code).toBe("invalid_mapping");
  });

  it("lines the ledger cannot store are listed by line number; the rest are imported", async () => {
    // Proves per-line errors (an amount finer than the currency's minor unit; a client line that does not validate).
    const auth = authFor(newOrg());
    const camt = fixture("camt053/genkgo-camt053.v2.five.decimals.xml").toString("utf8").replace('<Amt Ccy="EUR">8.850</Amt>', '<Amt Ccy="EUR">8.855</Amt>');
    const r = body(await imp(auth, { action: "import", data: camt }), "import");
    expect(r).toMatchObject({ imported: 0, error_count: 1, errors: [{ code: "amount_not_representable", line: expect.any(Number) }] });
    const lines = body(
      await imp(auth, {
        action: "import",
        account_name: "manual",
        transactions: [
          { date: "2024-01-02", amount: -1250, reference: "T1" },
          { date: "02/01/2024", amount: 5 },
          { date: "2024-01-03", amount: 1.5 },
        ],
      }),
      "import",
    );
    expect(lines).toMatchObject({
      format: "transactions",
      imported: 1,
      error_count: 2,
      errors: [
        { line: 2, code: "invalid_line" },
        { line: 3, code: "invalid_line" },
      ],
    });
  });

  it("bad input answers a precise 400 code with the place in details, and writes nothing", async () => {
    // Proves each failure of reading a statement is a typed client error and leaves no rows behind.
    const auth = authFor(newOrg());
    const expectCode = async (b: Record<string, unknown>, code: string) => {
      const e = err(await imp(auth, { action: "import", ...b }));
      expect(e.code, JSON.stringify(b).slice(0, 80)).toBe(code);
      return e as { code: string; details?: { path: string; message: string }[] };
    };
    await expectCode({ data: "" }, "empty_statement");
    await expectCode({ data: "  \n\t" }, "empty_statement");
    await expectCode({}, "empty_statement");
    await expectCode(
      { data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]).toString("base64"), data_encoding: "base64" },
      "binary_statement",
    );
    await expectCode({ data: "\u0002\u0004\u0005\u0006\u0007\u0008garbage\u000e\u000f", mapping: MAPPING }, "binary_statement");
    await expectCode({ data: "not base64 !!", data_encoding: "base64" }, "invalid_base64");
    await expectCode({ data: CSV }, "mapping_required");
    await expectCode({ data: CSV, format: "csv", mapping: { ...MAPPING, amount: "Betrag" } }, "mapping_column_not_found");
    await expectCode({ data: CSV, format: "csv", mapping: { date: "Date", currency: "EUR" } }, "invalid_mapping");
    await expectCode({ data: CSV, format: "csv", mapping: { ...MAPPING, encoding: "ebcdic" } }, "invalid_mapping");
    await expectCode({ data: "<?xml version='1.0'?><Document xmlns='urn:example'/>" }, "unsupported_format");
    await expectCode({ data: CSV, template_id: "tmpl_missing" }, "template_not_found");
    const bad = await expectCode({ data: `${CSV}2024-03-03,Broken,R9,abc\n`, format: "csv", mapping: MAPPING }, "unparseable_statement");
    expect(bad.details).toEqual([{ path: "data", message: expect.stringMatching(/^line 6: .*amount/) }]);
    const ofx = await expectCode(
      {
        data: "OFXHEADER:100\n\n<OFX><BANKMSGSRSV1><STMTTRNRS><STMTRS><CURDEF>USD\n<BANKTRANLIST>\n<STMTTRN><TRNAMT>12,x</STMTTRN></BANKTRANLIST></STMTRS></STMTTRNRS></BANKMSGSRSV1></OFX>",
      },
      "unparseable_statement",
    );
    expect(ofx.details?.[0]?.message).toMatch(/^line \d+: /);
    expect(await rowsOf(auth)).toEqual({ lines: 0, net: 0, imports: 0 });
  });
});

describe("statement parsing off the event loop", () => {
  /** The largest statement an import request carries: the body limit less the RPC envelope and the other fields. */
  const INPUT_BYTES = IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX - 1024;
  /** The ledger's default parse budget (STATEMENT_PARSE_BUDGET_MS), which the shared harness runs with. */
  const BUDGET_MS = LedgerEnv.STATEMENT_PARSE_BUDGET_MS.parse(undefined);
  /** Above the budget: the RPC, a worker replaced, and a loaded machine. */
  const ANSWER_MARGIN_MS = 10_000;
  /**
   * Longest a posting may take while a statement is read. A posting is answered in milliseconds; an event loop
   * held by a parse would hold it for the whole parse, which is longer than this in every case below.
   */
  const POSTING_LATENCY_MS_MAX = 3_000;

  interface Timed<T> {
    value: T;
    ms: number;
    postings: number[];
  }

  /** Posts top-ups one after another until `work` settles; answers its value, how long it took, each posting's latency. */
  async function postingWhile<T>(harness: LedgerHarness, work: Promise<T>): Promise<Timed<T>> {
    const org = newOrg();
    const created = await createWallet(harness.deps, { orgId: org, livemode: false }, { owner_id: "statement-load", redeemable: true, transferable: true });
    const wallet = String(created.wallet["id"]);
    const started = performance.now();
    let settled = false;
    const done = work.finally(() => (settled = true));
    const postings: number[] = [];
    while (!settled) {
      const t0 = performance.now();
      const reply = await harness.postRpc({
        org_id: org,
        livemode: false,
        kind: "wallet_topup",
        reference_id: `load-${postings.length}`,
        postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: wallet }, amount: 1 }],
      });
      ok(reply);
      postings.push(performance.now() - t0);
    }
    const value = await done;
    return { value, ms: performance.now() - started, postings };
  }

  function outcome(reply: RpcReply): string {
    return reply.ok ? "parsed" : reply.error.code;
  }

  it("every format's 1 MiB pathological statement is answered within the parse budget while postings keep being answered", async () => {
    // Proves no statement holds the ledger: each is read or refused within its budget, and postings stay fast throughout.
    const auth = authFor(newOrg());
    const inputs = pathologicalStatements(INPUT_BYTES);
    expect(new Set(inputs.map((p) => p.opts.format))).toEqual(new Set(["csv", "mt940", "ofx", "camt053", "bai2"]));
    for (const p of inputs) {
      const data = { action: "parse_preview", format: p.opts.format, data: p.text, ...(p.opts.mapping ? { mapping: p.opts.mapping } : {}) };
      expect(JSON.stringify(data).length).toBeLessThan(IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX);
      const run = await postingWhile(h, imp(auth, data));
      expect(outcome(run.value), p.name).toMatch(/^(parsed|unparseable_statement|statement_too_complex)$/);
      expect(run.ms, p.name).toBeLessThan(BUDGET_MS + ANSWER_MARGIN_MS);
      expect(Math.max(...run.postings), p.name).toBeLessThan(POSTING_LATENCY_MS_MAX);
    }
  }, 120_000);

  it("a statement that never finishes reading answers 422 statement_too_complex at its budget; postings are answered meanwhile", async () => {
    // Proves the budget with a reader stuck for good: its worker is ended, the request answers, the ledger never stalls.
    const budgetMs = 8_000;
    const pool = new StatementParserPool({ workers: 1, budgetMs, workerUrl: ENDLESS_WORKER_URL, log: pino({ level: "silent" }) });
    const stuck = await startLedger({ deps: { statementParser: pool } });
    try {
      await pool.ready();
      const auth = authFor(newOrg());
      const run = await postingWhile(
        stuck,
        stuck.call("importTransactions", auth, { body: { action: "parse_preview", format: "csv", data: ENDLESS_STATEMENT } }),
      );
      expect(err(run.value)).toMatchObject({ code: "statement_too_complex" });
      // Answered by the budget, not at once (the clocks of this test and of the pool start a few ms apart).
      expect(run.ms).toBeGreaterThanOrEqual(budgetMs * 0.9);
      expect(run.ms).toBeLessThan(budgetMs + ANSWER_MARGIN_MS);
      // Sequential postings all through the budget: a stalled loop would have answered none until the end.
      expect(run.postings.length).toBeGreaterThan(5);
      expect(Math.max(...run.postings)).toBeLessThan(POSTING_LATENCY_MS_MAX);
      // A fresh worker reads the next statement.
      const next = ok(
        await stuck.call("importTransactions", auth, {
          body: {
            action: "parse_preview",
            format: "csv",
            data: "Date,Amount\n2024-01-01,2.00\n",
            mapping: { date: "Date", amount: "Amount", currency: "EUR" },
          },
        }),
      );
      expect(next.body["preview"]).toMatchObject({ format: "csv", line_count: 1 });
    } finally {
      await stuck.close();
      await pool.close();
    }
  }, 90_000);
});
