import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture } from "../testing/fixtures.ts";

const read = (path: string) => parseStatement(fixture(path), { format: "auto" });

describe("camt.053", () => {
  it("001.02 minimal: one statement, IBAN NL26VAYB8060476890, one credit of 8.85 EUR with its debtor", () => {
    // Proves the entry, its dates, reference and counter-party are read from the 001.02 schema.
    const r = read("camt053/genkgo-camt053.v2.minimal.xml");
    expect(r.format).toBe("camt053");
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ id: "NL26VAYB8060476890", iban: "NL26VAYB8060476890", currency: "EUR" });
    expect(s.transactions).toEqual([
      expect.objectContaining({
        amount: 885,
        amount_decimal: "8.85",
        currency: "EUR",
        type: "credit",
        date: "2014-12-31",
        value_date: "2015-01-02",
        reference: "4654654654654654",
        counterparty: { name: "NAME NAME", account: "NL56AGDH9619008421" },
      }),
    ]);
  });

  it("balances in mixed currencies (EUR, SEK debit, CHF, JPY debit) are kept each in its own currency and precision", () => {
    // Proves JPY has no decimals, a DBIT balance is negative, and reconciliation across currencies is not attempted.
    const s = read("camt053/genkgo-camt053.v2.minimal.xml").statements[0]!;
    expect(s.balances.map((b) => [b.kind, b.amount, b.currency])).toEqual([
      ["OPBD", 1815, "EUR"],
      ["CLBD", -2700, "SEK"],
      ["OPAV", 3500, "CHF"],
      ["CLAV", -2700, "JPY"],
    ]);
    expect(s.reconciliation).toMatchObject({ reconciles: null, difference: null });
    expect(s.reconciliation.reason).toMatch(/SEK/);
  });

  it("001.04 and 001.08 carry the same data in their schemas: same entry, same balances", () => {
    // Proves the reader follows the version changes (Othr/Id account, Sts/Cd, DtTm booking date, Pty-wrapped names).
    for (const path of ["camt053/genkgo-camt053.v4.xml", "camt053/genkgo-camt053.v8.xml"]) {
      const s = read(path).statements[0]!;
      expect(s.account).toMatchObject({ id: "NL26VAYB8060476890", currency: "EUR", name: "FINPETROL" });
      expect(s.transactions.map((t) => [t.amount, t.currency, t.type, t.date, t.bank_reference])).toEqual([
        [885, "EUR", "credit", "2014-12-31", "AAAASESS-FP-CN_98765/01"],
      ]);
      expect(s.transactions[0]!.counterparty?.name).toBe("NAME NAME");
      expect(s.balances.map((b) => [b.kind, b.amount, b.currency])).toEqual([
        ["OPBD", 1815, "EUR"],
        ["CLBD", -2700, "SEK"],
        ["OPAV", 3500, "CHF"],
        ["CLAV", -2700, "JPY"],
      ]);
    }
    expect(read("camt053/genkgo-camt053.v8.xml").statements[0]!.transactions[0]!.bank_code).toBe("PMNT/RCDT/BOOK");
  });

  it("two statements on one IBAN: 18.15 + 8.85 = 27.00 and 27.00 − 7.00 = 20.00 both reconcile", () => {
    // Proves each Stmt is its own statement with its own reconciliation.
    const r = read("camt053/genkgo-camt053.v2.multi.statement.xml");
    expect(
      r.statements.map((s) => [
        s.statement_id,
        s.transactions.map((t) => t.amount),
        s.opening_balance?.amount,
        s.closing_balance?.amount,
        s.reconciliation.reconciles,
      ]),
    ).toEqual([
      ["253EURNL26VAYB8060476890", [885], 1815, 2700, true],
      ["254EURNL26VAYB8060476890", [-700], 2700, 2000, true],
    ]);
  });

  it("three-decimal amounts are kept exactly (18.150, 8.850, 27.050) and the statement that does not reconcile shows 0.050", () => {
    // Proves extra written decimals survive as strings and the difference is exact, not rejected.
    const s = read("camt053/genkgo-camt053.v2.five.decimals.xml").statements[0]!;
    expect(s.transactions.map((t) => [t.amount, t.amount_decimal])).toEqual([[885, "8.850"]]);
    expect([s.opening_balance?.amount_decimal, s.closing_balance?.amount_decimal]).toEqual(["18.150", "27.050"]);
    expect(s.reconciliation).toEqual({ reconciles: false, difference: 5, difference_decimal: "0.050" });
  });

  it("a five-decimal amount that minor units cannot hold stays exact as a string, with amount null and a warning", () => {
    // Proves nothing is rounded: 1.23456 EUR is never turned into cents.
    const xml = fixture("camt053/genkgo-camt053.v2.five.decimals.xml").toString("utf8").replace(">8.850<", ">1.23456<");
    const r = parseStatement(xml, { format: "camt053" });
    const t = r.statements[0]!.transactions[0]!;
    expect([t.amount, t.amount_decimal]).toEqual([null, "1.23456"]);
    expect(r.warnings).toEqual([expect.objectContaining({ code: "amount_not_representable", line: t.raw_line_no })]);
    expect(r.statements[0]!.reconciliation.difference_decimal).toBe("7.66544");
  });

  it("all ten balance types are reported in file order, opening from OPBD and closing from CLBD", () => {
    // Proves no balance type is dropped and the right two drive reconciliation.
    const s = read("camt053/genkgo-camt053.v2.all-balance-types.xml").statements[0]!;
    expect(s.account.iban).toBe("CH2801234000123456789");
    expect(s.balances.map((b) => [b.kind, b.amount])).toEqual([
      ["OPBD", 101],
      ["PRCD", 202],
      ["OPAV", 303],
      ["CLBD", 404],
      ["CLAV", 505],
      ["FWAV", 606],
      ["INFO", 707],
      ["ITAV", 808],
      ["ITBD", 909],
      ["XPCD", 1010],
    ]);
    expect([s.opening_balance?.kind, s.closing_balance?.kind]).toEqual(["OPBD", "CLBD"]);
    expect(s.transactions.map((t) => t.amount_decimal)).toEqual(["8.850"]);
  });

  it("malformed XML is an invalid_statement with the line, and another ISO 20022 message is unsupported_format", () => {
    // Proves XML errors are typed and camt.054 is not mistaken for a statement.
    const broken = fixture("camt053/genkgo-camt053.v2.minimal.xml").toString("utf8").replace("</Ntry>", "</Nope>");
    expect(() => parseStatement(broken, { format: "camt053" })).toThrow(expect.objectContaining({ code: "invalid_statement" }));
    const camt054 = '<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.02"><BkToCstmrDbtCdtNtfctn/></Document>';
    expect(() => parseStatement(camt054, { format: "auto" })).toThrow(expect.objectContaining({ code: "unsupported_format" }));
  });
});
