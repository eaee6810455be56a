import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture } from "../testing/fixtures.ts";

const amounts = (path: string) => parseStatement(fixture(path), { format: "auto" }).statements.map((s) => s.transactions.map((t) => t.amount));
const balances = (path: string) =>
  parseStatement(fixture(path), { format: "auto" }).statements.map((s) => Object.fromEntries(s.balances.map((b) => [b.kind, b.amount])));

describe("OFX 1.x (SGML) and 2.x (XML)", () => {
  it("checking v102: one CHECKING account in USD, +0.01 −34.51 −25.00, ledger 100.99, available 75.99", () => {
    // Proves the tab-indented SGML file with unclosed tags and no final newline reads completely.
    const r = parseStatement(fixture("ofx/ofxparse-checking-v102.ofx"), { format: "ofx" });
    expect(r.statements).toHaveLength(1);
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ id: "1452687~7", currency: "USD", bank_id: "5472369148", account_type: "CHECKING" });
    expect(s.transactions.map((t) => [t.date, t.amount, t.type, t.reference])).toEqual([
      ["2011-03-31", 1, "credit", "0000486"],
      ["2011-04-05", -3451, "debit", "0000487"],
      ["2011-04-07", -2500, "debit", "0000488"],
    ]);
    expect(balances("ofx/ofxparse-checking-v102.ofx")).toEqual([{ LEDGERBAL: 10099, AVAILBAL: 7599 }]);
    expect(s.closing_balance?.amount).toBe(10099);
  });

  it("checking v102: a NAME the bank cut at '/' is kept as written, and the MEMO carries the full text", () => {
    // Proves the reader does not repair or merge the truncated NAME quirk.
    const t = parseStatement(fixture("ofx/ofxparse-checking-v102.ofx"), { format: "ofx" }).statements[0]!.transactions[0]!;
    expect(t.counterparty?.name).toBe("DIVIDEND EARNED FOR PERIOD OF 03");
    expect(t.description).toBe("DIVIDEND EARNED FOR PERIOD OF 03/01/2011 THROUGH 03/31/2011 ANNUAL PERCENTAGE YIELD EARNED IS 0.05%");
  });

  it("bank medium CAD: many tags on one line, dates with [-5:EST], apostrophes in NAME", () => {
    // Proves several elements per physical line, zone suffixes and quotes in text are read exactly.
    const s = parseStatement(fixture("ofx/ofxparse-bank-medium-cad-v102.ofx"), { format: "auto" }).statements[0]!;
    expect(s.account.currency).toBe("CAD");
    expect(s.transactions.map((t) => [t.date, t.amount, t.raw_line_no])).toEqual([
      ["2009-04-01", -660, 15],
      ["2009-04-02", -31667, 16],
      ["2009-04-03", -2200, 17],
    ]);
    expect(s.transactions.reduce((a, t) => a + (t.amount ?? 0), 0)).toBe(-34527);
    expect(s.transactions[1]!.counterparty?.name).toBe("Joe's Bald Hairstyles");
    expect(balances("ofx/ofxparse-bank-medium-cad-v102.ofx")).toEqual([{ LEDGERBAL: 38234, AVAILBAL: 68234 }]);
  });

  it("Banco do Brasil BRL: header says USASCII/1252 but the body is UTF-8; mixed closed and unclosed tags; MKTGINFO ignored", () => {
    // Proves the wrong charset header is named in a warning and the UTF-8 text is decoded right.
    const r = parseStatement(fixture("ofx/asgrim-bancodobrasil-brl-v102.ofx"), { format: "auto" });
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ id: "455000-5", currency: "BRL", bank_id: "001" });
    expect(s.transactions.map((t) => [t.amount, t.description])).toEqual([[23955, "DOC CRÉDITO EM CONTA"]]);
    expect(s.balances.map((b) => [b.kind, b.amount])).toEqual([["LEDGERBAL", 23935]]);
    expect(r.warnings.map((w) => w.code)).toContain("charset_mismatch");
  });

  it("Suncorp AUD (OFX 2.00): CRLF line endings, no final newline, NAME and MEMO in CDATA", () => {
    // Proves CDATA sections are taken verbatim and CRLF does not leak into values or line numbers.
    const s = parseStatement(fixture("ofx/ofxparse-suncorp-aud-v200-crlf.ofx"), { format: "auto" }).statements[0]!;
    expect(s.account.currency).toBe("AUD");
    const t = s.transactions[0]!;
    expect([t.amount, t.date, t.counterparty?.name, t.raw_line_no]).toEqual([-1685, "2013-12-15", "EFTPOS WDL HANDYWAY ALDI STORE", 35]);
    expect(t.description).toBe("EFTPOS WDL HANDYWAY ALDI STORE   GEELONG WEST VICAU");
    expect(balances("ofx/ofxparse-suncorp-aud-v200-crlf.ofx")).toEqual([{ LEDGERBAL: 123412, AVAILBAL: 123412 }]);
  });

  it("savings USD (OFX 2.00): +200.00 +150.00 −100.00, ledger = available = 5250.00", () => {
    // Proves the XML generation reads the same way as SGML.
    expect(amounts("ofx/asgrim-savings-usd-v200.ofx")).toEqual([[20000, 15000, -10000]]);
    expect(balances("ofx/asgrim-savings-usd-v200.ofx")).toEqual([{ LEDGERBAL: 525000, AVAILBAL: 525000 }]);
    expect(parseStatement(fixture("ofx/asgrim-savings-usd-v200.ofx"), { format: "ofx" }).statements[0]!.account.account_type).toBe("SAVINGS");
  });

  it("three STMTRS in one file give three GBP statements with 0 / 2 / 1 lines, even though every TRNUID is 1", () => {
    // Proves statements are split by STMTRS, not by the (duplicated) transaction ids.
    const r = parseStatement(fixture("ofx/asgrim-multiple-accounts-gbp-v200.ofx"), { format: "auto" });
    expect(r.statements.map((s) => s.account.currency)).toEqual(["GBP", "GBP", "GBP"]);
    expect(amounts("ofx/asgrim-multiple-accounts-gbp-v200.ofx")).toEqual([[], [-398, 50000], [1870]]);
    expect(r.statements.map((s) => s.closing_balance?.amount)).toEqual([4301, 300025, 1172856]);
  });

  it("OFX carries no opening balance: reconciliation is reported as not checkable, never as failing", () => {
    // Proves the reconciliation field does not invent a verdict.
    const s = parseStatement(fixture("ofx/asgrim-savings-usd-v200.ofx"), { format: "ofx" }).statements[0]!;
    expect(s.reconciliation).toMatchObject({ reconciles: null, difference: null });
    expect(s.reconciliation.reason).toMatch(/opening balance/);
  });
});

describe("QFX (OFX with Intuit fields)", () => {
  it("Chase credit card: blank line before OFXHEADER, CCSTMTRS, −10.00; ledger −10.00, available 90.00", () => {
    // Proves credit-card statements and a leading blank line are read, and content with INTU fields is detected as qfx.
    const r = parseStatement(fixture("qfx/ofxparse-chase-creditcard.qfx"), { format: "auto" });
    expect(r.format).toBe("qfx");
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ id: "0123012301230123", currency: "USD", account_type: "CREDITCARD" });
    expect(s.transactions.map((t) => [t.date, t.amount, t.type])).toEqual([["2020-01-01", -1000, "debit"]]);
    expect(s.balances.map((b) => [b.kind, b.amount])).toEqual([
      ["LEDGERBAL", -1000],
      ["AVAILBAL", 9000],
    ]);
  });

  it("Chase credit card: the UTF-8 '¦' survives although CHARSET says 1252", () => {
    // Proves bytes that are valid UTF-8 win over a single-byte charset header, with a warning.
    const r = parseStatement(fixture("qfx/ofxparse-chase-creditcard.qfx"), { format: "qfx" });
    expect(r.statements[0]!.transactions[0]!.description).toBe("SQ *ECCO UN POCO ¦ NATURA");
    expect(r.warnings.map((w) => w.code)).toEqual(["charset_mismatch"]);
  });

  it("HTML entities: &amp; decodes to &, a double-escaped &amp;lt; decodes once to &lt;", () => {
    // Proves entities are decoded exactly once (no guessing at what a double escape meant).
    const s = parseStatement(fixture("qfx/actual-html-entities-cad.qfx"), { format: "auto" }).statements[0]!;
    expect(s.transactions.map((t) => t.amount)).toEqual([-100, -100]);
    expect(s.transactions[0]!.description).toContain("B.C. HYDRO & POWER AUTHORITY");
    expect(s.transactions[1]!.counterparty?.name).toBe("TPAY &lt;DEFTPYMT&gt;");
    expect(s.balances.map((b) => b.amount)).toEqual([111111, 111111]);
  });

  it("UTF-8 QFX: ENCODING UTF-8, CHARSET NONE; French text with é, € and an em dash", () => {
    // Proves a UTF-8 declaration is honoured without a mismatch warning.
    const r = parseStatement(fixture("qfx/actual-utf8-cad.qfx"), { format: "auto" });
    const t = r.statements[0]!.transactions[0]!;
    expect([t.amount, t.counterparty?.name, t.description]).toEqual([-2000, "Café Métro €uro", "Café Métro €uro / Paiement 5€ — débit"]);
    expect(r.statements[0]!.balances.map((b) => b.amount)).toEqual([999999, 999999]);
    expect(r.warnings).toEqual([]);
  });

  it("the same bytes read as format ofx or qfx give the same statements", () => {
    // Proves qfx is OFX for the reader: the format option changes nothing but the label.
    const a = parseStatement(fixture("qfx/actual-utf8-cad.qfx"), { format: "ofx" });
    const b = parseStatement(fixture("qfx/actual-utf8-cad.qfx"), { format: "qfx" });
    expect(a.statements).toEqual(b.statements);
  });

  it("a transaction without TRNAMT is an invalid_statement naming the line and field", () => {
    // Proves broken OFX fails with a typed error, not a generic exception.
    const text =
      "OFXHEADER:100\n<OFX><BANKMSGSRSV1><STMTTRNRS><STMTRS><CURDEF>USD<BANKACCTFROM><ACCTID>1</BANKACCTFROM><BANKTRANLIST>\n<STMTTRN><DTPOSTED>20240101</STMTTRN></BANKTRANLIST></STMTRS></STMTTRNRS></BANKMSGSRSV1></OFX>";
    expect(() => parseStatement(text, { format: "ofx" })).toThrow(
      expect.objectContaining({ code: "invalid_statement", details: { line: 3, field: "TRNAMT" } }),
    );
  });
});
