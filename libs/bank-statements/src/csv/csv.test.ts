import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture } from "../testing/fixtures.ts";
import type { CsvMappingInput } from "./mapping.ts";

const csv = (path: string, mapping: CsvMappingInput) => parseStatement(fixture(path), { format: "csv", mapping });

const SCHWAB: CsvMappingInput = {
  date: "Date",
  date_format: "MM/DD/YYYY",
  debit: "Withdrawal",
  credit: "Deposit",
  description: "Description",
  reference: "CheckNumber",
  balance: "RunningBalance",
  currency: "USD",
  thousands_separator: ",",
};
const GLS: CsvMappingInput = {
  date: "Buchungstag",
  value_date: "Wertstellung",
  date_format: "DD.MM.YYYY",
  amount: "Betrag",
  balance: "Kontostand",
  description: ["Buchungstext", "VWZ1", "VWZ2"],
  counterparty: "Auftraggeber/Empfänger",
  account: "Kontonummer",
  currency_column: "Währung",
  decimal_separator: ",",
  thousands_separator: ".",
  encoding: "latin1",
};
const UBS: CsvMappingInput = {
  date: "Date de valeur",
  date_format: "DD.MM.YYYY",
  debit: "Débit",
  credit: "Crédit",
  description: ["Description 1", "Description 2"],
  reference: "N° de transaction",
  balance: "Solde",
  account: "Produit",
  currency_column: "Monn.",
  thousands_separator: "'",
};
const ING: CsvMappingInput = { date: "date", date_format: "DD/MM/YYYY", amount: "amount", description: "desc", balance: "balance", currency: "EUR" };
const CAPITALONE: CsvMappingInput = {
  date: "Posted Date",
  value_date: "Transaction Date",
  debit: "Debit",
  credit: "Credit",
  description: "Description",
  currency: "USD",
};

describe("CSV with a mapping", () => {
  it("Schwab: quoted fields, MM/DD/YYYY, Withdrawal/Deposit columns with $ and thousands commas, newest first; reconciles", () => {
    // Proves '$1,036.47' is read exactly and the running balance gives opening 1093.74 and closing 878.47.
    const s = csv("csv/csv2ofx-schwab-checking-us.csv", SCHWAB).statements[0]!;
    expect(s.transactions.map((t) => [t.date, t.amount])).toEqual([
      ["2022-08-17", 2000],
      ["2022-08-14", -10300],
      ["2022-08-09", -7500],
      ["2022-08-04", -5727],
    ]);
    expect(s.transactions[2]!.reference).toBe("558");
    expect([s.opening_balance?.amount, s.closing_balance?.amount]).toEqual([109374, 87847]);
    expect(s.reconciliation).toEqual({ reconciles: true, difference: 0, difference_decimal: "0.00" });
  });

  it("GLS Bank: ISO-8859-1 bytes (ä in the header), ';' separator, DD.MM.YYYY, German numbers, no final newline", () => {
    // Proves the latin1 encoding resolves 'Auftraggeber/Empfänger', and '-98,76' / '1.234,56' read exactly.
    const r = csv("csv/csv2ofx-gls-bank-de-latin1.csv", GLS);
    const s = r.statements[0]!;
    expect(s.account).toMatchObject({ id: "1234567890", currency: "EUR" });
    expect(s.transactions).toEqual([
      expect.objectContaining({
        date: "2017-10-10",
        value_date: "2017-10-10",
        amount: -9876,
        type: "debit",
        counterparty: { name: "Drillisch Online AG" },
        description: "SEPA-Basislastschrift B4658645 U123456789 B123456 987 SIMply Rechnung",
      }),
    ]);
    expect(s.closing_balance?.amount).toBe(123456);
    expect(r.warnings).toEqual([]);
  });

  it("GLS Bank without a declared encoding: the bytes are not UTF-8, so they are read as windows-1252 with a warning", () => {
    // Proves a missing encoding never fails the import of a latin1 file, and says what it did.
    const { encoding: _drop, ...mapping } = GLS as Record<string, unknown>;
    const r = parseStatement(fixture("csv/csv2ofx-gls-bank-de-latin1.csv"), { format: "csv", mapping: mapping as CsvMappingInput });
    expect(r.statements[0]!.transactions[0]!.amount).toBe(-9876);
    expect(r.warnings.map((w) => w.code)).toEqual(["encoding_fallback"]);
  });

  it("UBS (French): UTF-8 header with N°, Débit, Crédit; apostrophe thousands separator; CHF", () => {
    // Proves "11'373.94" reads as 1137394 and the Débit/Crédit columns give the signs.
    const s = csv("csv/csv2ofx-ubs-ch-fr.csv", UBS).statements[0]!;
    expect(s.account.currency).toBe("CHF");
    expect(s.transactions.map((t) => [t.date, t.amount, t.reference])).toEqual([
      ["2019-03-31", -1000, "A01234BC01234567"],
      ["2019-02-28", 24000, "3456789ZT1234567"],
      ["2019-04-27", -20000, "9979360TI2115087"],
    ]);
    // The rows are not in (value-)date order, but the Solde column does chain in file order, so it gives the balances.
    expect([s.opening_balance?.amount, s.closing_balance?.amount, s.reconciliation.reconciles]).toEqual([1138394, 1141394, true]);
  });

  it("ING Spain: CRLF, no final newline, DD/MM/YYYY, signed amounts, accents; the balance column is not a running balance", () => {
    // Proves all ten amounts read exactly and a balance column that does not chain is reported, not trusted.
    const r = csv("csv/csv2ofx-ing-es.csv", ING);
    const s = r.statements[0]!;
    expect(s.transactions.map((t) => t.amount)).toEqual([283, 269, 137, 139411, -1760, -27689, -100000, -3700, -21930, 50000]);
    expect(s.transactions[3]!.date).toBe("2022-12-23");
    expect(s.transactions[0]!.description).toBe("Abono por campaña Abono Shopping NARANJA:GALP");
    expect(s.transactions.map((t) => t.raw_line_no)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(s.reconciliation.reconciles).toBeNull();
    expect(r.warnings.map((w) => w.code)).toEqual(["balance_not_running"]);
  });

  it("Capital One: ISO dates, Transaction/Posted dates, Debit 1000.00 and Credit 1000.00 in separate columns", () => {
    // Proves an unquoted file with separate debit and credit columns gives one debit and one credit.
    const s = csv("csv/csv2ofx-capitalone-card-us.csv", CAPITALONE).statements[0]!;
    expect(s.transactions.map((t) => [t.date, t.value_date, t.amount, t.type])).toEqual([
      ["2016-01-02", "2015-12-31", -100000, "debit"],
      ["2016-01-02", "2015-12-31", 100000, "credit"],
    ]);
  });

  it("CSV without a mapping is mapping_required; a mapping naming a missing column is invalid_mapping", () => {
    // Proves mapping problems are typed and name the field.
    expect(() => parseStatement(fixture("csv/csv2ofx-ing-es.csv"), { format: "csv" })).toThrow(expect.objectContaining({ code: "mapping_required" }));
    expect(() => parseStatement(fixture("csv/csv2ofx-ing-es.csv"), { format: "auto" })).toThrow(expect.objectContaining({ code: "mapping_required" }));
    expect(() => csv("csv/csv2ofx-ing-es.csv", { ...ING, amount: "importe" })).toThrow(
      expect.objectContaining({ code: "invalid_mapping", details: expect.objectContaining({ field: "amount", value: "importe" }) }),
    );
    expect(() => csv("csv/csv2ofx-ing-es.csv", { date: "date", currency: "EUR" } as CsvMappingInput)).toThrow(
      expect.objectContaining({ code: "invalid_mapping", details: expect.objectContaining({ field: "amount" }) }),
    );
  });

  it("a date that does not match the format is invalid_statement naming the line, the field and the value", () => {
    // Proves row errors point at the input line.
    expect(() => csv("csv/csv2ofx-ing-es.csv", { ...ING, date_format: "MM/DD/YYYY" })).toThrow(
      expect.objectContaining({ code: "invalid_statement", details: { line: 2, field: "date", value: "24/03/2022" } }),
    );
  });

  it("amounts in parentheses or with a trailing minus are negative; a quoted field with a newline keeps the row's first line", () => {
    // Proves the common accounting notations and multi-line records.
    const text = 'Date,Amount,Text\n2024-01-02,(12.50),a\n2024-01-03,7.00-,"two\nlines"\n2024-01-04,1,c\n';
    const s = parseStatement(text, { format: "csv", mapping: { date: "Date", amount: "Amount", description: "Text", currency: "EUR" } }).statements[0]!;
    expect(s.transactions.map((t) => [t.amount, t.raw_line_no])).toEqual([
      [-1250, 2],
      [-700, 3],
      [100, 5],
    ]);
  });
});
