import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture } from "../testing/fixtures.ts";

const read = (path: string) => parseStatement(fixture(path), { format: "auto" });
const sum = (xs: readonly { amount: number | null }[]) => xs.reduce((a, t) => a + (t.amount ?? 0), 0);

describe("MT940", () => {
  it("ABN AMRO: two statements, 8 + 2 debits in EUR, with the bank's header lines, :28: and :28C:, and a blank line", () => {
    // Proves the routing header lines and the blank line inside a statement are skipped, and amounts like "9," read as 9.00.
    const r = read("mt940/wolph-jejik-abnamro.sta");
    expect(r.format).toBe("mt940");
    expect(r.statements.map((s) => s.transactions.length)).toEqual([8, 2]);
    expect(r.statements.every((s) => s.transactions.every((t) => t.type === "debit" && t.currency === "EUR"))).toBe(true);
    expect(r.statements[0]!.transactions[0]).toMatchObject({ amount: -900, amount_decimal: "-9", date: "2011-05-24", value_date: "2011-05-24" });
    expect(r.statements.map((s) => [s.opening_balance?.kind, s.opening_balance?.amount, s.closing_balance?.kind, s.closing_balance?.amount])).toEqual([
      ["60F", 323628, "62F", 87684],
      ["60M", 287684, "62M", 184975],
    ]);
  });

  it("ABN AMRO does not reconcile (anonymised data): it is reported with the difference, not rejected", () => {
    // Proves a non-reconciling statement still parses and names closing − (opening + lines) exactly.
    const r = read("mt940/wolph-jejik-abnamro.sta");
    expect(r.statements.map((s) => s.reconciliation)).toEqual([
      { reconciles: false, difference: -203800, difference_decimal: "-2038.00" },
      { reconciles: false, difference: -100260, difference_decimal: "-1002.60" },
    ]);
  });

  it("Rabobank: IBAN account, two statements without '-' separators, C 1000.00 → 965.00 → 930.00 reconciling", () => {
    // Proves statements are split at the next :20: and zero-padded amounts read exactly.
    const r = read("mt940/wolph-jejik-rabobank-iban.sta");
    expect(r.statements.map((s) => s.account.iban)).toEqual(["NL71RABO0123456789", "NL71RABO0123456789"]);
    expect(r.statements.map((s) => s.transactions.map((t) => t.amount))).toEqual([
      [-2500, -1000],
      [-2500, -1000],
    ]);
    expect(r.statements.map((s) => [s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles])).toEqual([
      [100000, 96500, true],
      [96500, 93000, true],
    ]);
  });

  it("Rabobank: the counter-party IBAN on its own line after :61:, and a :86: wrapped in the middle of a word", () => {
    // Proves supplementary details and structured :86: fields are re-joined where SWIFT wrapped them.
    const t = read("mt940/wolph-jejik-rabobank-iban.sta").statements[0]!.transactions;
    expect(t[0]!.counterparty).toEqual({ account: "NL70ABNA0987654321", name: "CONTRA ACCOUNT HOLDER" });
    expect(t[1]!.counterparty?.name).toBe("JOHN DOE");
    expect(t[1]!.description).toBe("Reference 201301234");
  });

  it("Citi USD: entry date sent as four spaces, D/C followed by funds code D, two zero-amount entries; reconciles", () => {
    // Proves the blank entry date falls back to the value date and zero amounts are kept as lines.
    const s = read("mt940/wolph-citi-usd.sta").statements[0]!;
    expect(s.transactions.map((t) => [t.date, t.amount])).toEqual([
      ["2024-03-12", -21239],
      ["2024-03-12", -36928],
      ["2024-03-12", 0],
      ["2024-03-12", 0],
      ["2024-03-12", -56108],
    ]);
    expect([s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles]).toEqual([1737667, 1623392, true]);
    expect(s.balances.map((b) => b.kind)).toEqual(["60F", "62F", "64"]);
  });

  it("three statements in three currencies (DEM, EUR, PLN), 11 + 2 + 3 lines, all reconciling", () => {
    // Proves a withdrawn currency (DEM) keeps two decimals and each statement keeps its own currency.
    const r = read("mt940/wolph-cmxl-three-statements.sta");
    expect(
      r.statements.map((s) => [s.account.currency, s.transactions.length, s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles]),
    ).toEqual([
      ["DEM", 11, 8434974, 8443704, true],
      ["EUR", 2, 218795, 438795, true],
      ["PLN", 3, 4000000, 5004000, true],
    ]);
    expect(r.statements[2]!.transactions.every((t) => t.currency === "PLN")).toBe(true);
  });

  it("cmxl: DR/CR is the mark plus funds code R, the ?20 structure wraps across lines, :62F: dated before :60F:", () => {
    // Proves "DR800," is a debit of 800.00, German ?-subfields are read, and an odd closing date is kept as written.
    const r = read("mt940/wolph-cmxl-three-statements.sta");
    const eur = r.statements[1]!;
    expect(eur.transactions.map((t) => [t.amount, t.type])).toEqual([
      [-80000, "debit"],
      [300000, "credit"],
    ]);
    expect(eur.transactions[0]).toMatchObject({ description: "Miete November", counterparty: { name: "MUELLER", bank_id: "10020030" } });
    expect(eur.transactions[1]!.description.startsWith("Gehalt Oktober")).toBe(true);
    const pln = r.statements[2]!;
    expect([pln.opening_balance?.date, pln.closing_balance?.date]).toEqual(["2003-10-02", "2002-03-25"]);
    expect(pln.transactions[0]!.counterparty?.account).toBe("PL08106000760000777777777777");
  });

  it("Sberbank HUF: CRLF, non-standard :NS: tags, U+FFFD characters, no '-' terminator; HUF has two decimals", () => {
    // Proves HUF amounts are minor units at ISO 4217's two decimals and the :NS: blocks do not break the statement.
    const s = read("mt940/wolph-sberbank-huf-crlf.sta").statements[0]!;
    expect(s.account.currency).toBe("HUF");
    expect(s.transactions.map((t) => t.amount)).toEqual([-240200, -346000, -357500]);
    expect([s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles]).toEqual([62731130, 61787430, true]);
    expect(s.transactions[0]!.description).toContain("\ufffd");
    expect(s.transactions[0]!.raw_line_no).toBe(12);
  });

  it("mBank PLN: SOH and ETX control bytes around the message, three credits of 0.01, 0.40 → 0.43", () => {
    // Proves control bytes are removed (with a warning) and tiny amounts are exact.
    const r = read("mt940/wolph-mbank-pln.sta");
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ iban: "PL29114010810000267002001002", currency: "PLN" });
    expect(s.transactions.map((t) => [t.amount, t.type, t.bank_reference])).toEqual([
      [1, "credit", "MB170119012058"],
      [1, "credit", "MB170119012085"],
      [1, "credit", "MB170119012121"],
    ]);
    expect(sum(s.transactions)).toBe(3);
    expect([s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles]).toEqual([40, 43, true]);
    expect(r.warnings.map((w) => w.code)).toEqual(["control_characters_removed"]);
  });

  it("a :61: that is not a statement line is an invalid_statement naming line and field", () => {
    // Proves malformed MT940 fails with a typed error pointing at the input.
    const text = ":20:X\n:25:123\n:60F:C240101EUR1,00\n:61:garbage\n:62F:C240101EUR1,00\n-";
    expect(() => parseStatement(text, { format: "mt940" })).toThrow(
      expect.objectContaining({ code: "invalid_statement", details: { line: 4, field: "61", value: "garbage" } }),
    );
  });

  it("RD (reversal of a debit) adds to the balance and RC takes from it", () => {
    // Proves reversal marks get the sign of the balance effect, not of their first letter.
    const text = ":20:X\n:25:123\n:60F:C240101EUR10,00\n:61:240101RD1,00NTRFNONREF\n:61:240101RC2,00NTRFNONREF\n:62F:C240101EUR9,00\n-";
    const s = parseStatement(text, { format: "mt940" }).statements[0]!;
    expect(s.transactions.map((t) => t.amount)).toEqual([100, -200]);
    expect(s.reconciliation.reconciles).toBe(true);
  });
});
