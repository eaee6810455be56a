/**
 * The statements of libs/bank-statements/test-data with the figures their SOURCES.md publishes, for the import
 * tests of the ledger and of the gateway.
 */
import { fixture } from "../../../../../libs/bank-statements/src/testing/fixtures.ts";

export { fixture };

export const SCHWAB = {
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
export const GLS = {
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
export const UBS = {
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
export const ING = { date: "date", date_format: "DD/MM/YYYY", amount: "amount", description: "desc", balance: "balance", currency: "EUR" };
export const CAPITALONE = {
  date: "Posted Date",
  value_date: "Transaction Date",
  debit: "Debit",
  credit: "Credit",
  description: "Description",
  currency: "USD",
};

/**
 * Each file of libs/bank-statements/test-data with the figures its SOURCES.md publishes: statements, lines, the
 * net of the lines in minor units (null where the source gives no figure to check it against) and the closing
 * balances (null where a statement has none).
 */
export interface FixtureFigures {
  path: string;
  format: string;
  mapping?: Record<string, unknown>;
  statements: number;
  lines: number;
  net: number | null;
  closing?: (number | null)[];
}

export const FIXTURES: FixtureFigures[] = [
  { path: "ofx/ofxparse-checking-v102.ofx", format: "qfx", statements: 1, lines: 3, net: 1 - 3451 - 2500, closing: [10099] },
  { path: "ofx/ofxparse-bank-medium-cad-v102.ofx", format: "qfx", statements: 1, lines: 3, net: -34527, closing: [38234] },
  { path: "ofx/asgrim-bancodobrasil-brl-v102.ofx", format: "ofx", statements: 1, lines: 1, net: 23955, closing: [23935] },
  { path: "ofx/ofxparse-suncorp-aud-v200-crlf.ofx", format: "ofx", statements: 1, lines: 1, net: -1685, closing: [123412] },
  { path: "ofx/asgrim-savings-usd-v200.ofx", format: "ofx", statements: 1, lines: 3, net: 20000 + 15000 - 10000, closing: [525000] },
  { path: "ofx/asgrim-multiple-accounts-gbp-v200.ofx", format: "ofx", statements: 3, lines: 3, net: -398 + 50000 + 1870, closing: [4301, 300025, 1172856] },
  { path: "qfx/ofxparse-chase-creditcard.qfx", format: "qfx", statements: 1, lines: 1, net: -1000, closing: [-1000] },
  { path: "qfx/actual-html-entities-cad.qfx", format: "qfx", statements: 1, lines: 2, net: -200, closing: [111111] },
  { path: "qfx/actual-utf8-cad.qfx", format: "qfx", statements: 1, lines: 1, net: -2000, closing: [999999] },
  { path: "mt940/wolph-jejik-abnamro.sta", format: "mt940", statements: 2, lines: 10, net: null, closing: [87684, 184975] },
  { path: "mt940/wolph-jejik-rabobank-iban.sta", format: "mt940", statements: 2, lines: 4, net: -7000, closing: [96500, 93000] },
  { path: "mt940/wolph-citi-usd.sta", format: "mt940", statements: 1, lines: 5, net: -(21239 + 36928 + 56108), closing: [1623392] },
  { path: "mt940/wolph-cmxl-three-statements.sta", format: "mt940", statements: 3, lines: 16, net: null, closing: [8443704, 438795, 5004000] },
  { path: "mt940/wolph-sberbank-huf-crlf.sta", format: "mt940", statements: 1, lines: 3, net: -(240200 + 346000 + 357500), closing: [61787430] },
  { path: "mt940/wolph-mbank-pln.sta", format: "mt940", statements: 1, lines: 3, net: 3, closing: [43] },
  { path: "bai2/moov-sample1-cad.bai2", format: "bai2", statements: 2, lines: 17, net: 0 },
  { path: "bai2/moov-sample2-multigroup.bai2", format: "bai2", statements: 5, lines: 4, net: null },
  { path: "bai2/moov-sample3-multiple-records-per-line.bai2", format: "bai2", statements: 15, lines: 26, net: null },
  { path: "bai2/moov-sample4-newline-continuations.bai2", format: "bai2", statements: 5, lines: 17, net: null },
  { path: "bai2/moov-sample5-slashes-in-text.bai2", format: "bai2", statements: 5, lines: 20, net: null },
  { path: "camt053/genkgo-camt053.v2.minimal.xml", format: "camt053", statements: 1, lines: 1, net: 885 },
  { path: "camt053/genkgo-camt053.v2.multi.statement.xml", format: "camt053", statements: 2, lines: 2, net: 885 - 700, closing: [2700, 2000] },
  { path: "camt053/genkgo-camt053.v2.five.decimals.xml", format: "camt053", statements: 1, lines: 1, net: 885, closing: [2705] },
  { path: "camt053/genkgo-camt053.v2.all-balance-types.xml", format: "camt053", statements: 1, lines: 1, net: 885, closing: [404] },
  { path: "camt053/genkgo-camt053.v4.xml", format: "camt053", statements: 1, lines: 1, net: 885 },
  { path: "camt053/genkgo-camt053.v8.xml", format: "camt053", statements: 1, lines: 1, net: 885 },
  { path: "csv/csv2ofx-schwab-checking-us.csv", format: "csv", mapping: SCHWAB, statements: 1, lines: 4, net: 2000 - 10300 - 7500 - 5727, closing: [87847] },
  { path: "csv/csv2ofx-gls-bank-de-latin1.csv", format: "csv", mapping: GLS, statements: 1, lines: 1, net: -9876, closing: [123456] },
  { path: "csv/csv2ofx-ubs-ch-fr.csv", format: "csv", mapping: UBS, statements: 1, lines: 3, net: -1000 + 24000 - 20000, closing: [1141394] },
  {
    path: "csv/csv2ofx-ing-es.csv",
    format: "csv",
    mapping: ING,
    statements: 1,
    lines: 10,
    net: 283 + 269 + 137 + 139411 - 1760 - 27689 - 100000 - 3700 - 21930 + 50000,
  },
  { path: "csv/csv2ofx-capitalone-card-us.csv", format: "csv", mapping: CAPITALONE, statements: 1, lines: 2, net: 0 },
];

/** The import body of a fixture: its exact bytes in base64, format detected from content (CSV with its mapping). */
export function fixtureBody(f: FixtureFigures, action: "import" | "parse_preview"): Record<string, unknown> {
  return {
    action,
    format: f.mapping ? "csv" : "auto",
    data: fixture(f.path).toString("base64"),
    data_encoding: "base64",
    ...(f.mapping ? { mapping: f.mapping } : {}),
  };
}
