import { parse } from "csv-parse/sync";
import { isCurrencyCode } from "../core/currency.ts";
import { fullYear, isoDate } from "../core/dates.ts";
import { addDecimal, isNegative, isZero, negateDecimal, parseDecimal, subDecimal, type Decimal } from "../core/decimal.ts";
import { invalidStatement, StatementError } from "../core/errors.ts";
import { AMOUNT_CHARS_MAX, checkFieldLength, FIELD_CHARS_MAX } from "../core/limits.ts";
import { exactAmount } from "../core/money.ts";
import { reconcile } from "../core/reconcile.ts";
import { inputText } from "../core/text.ts";
import type { Balance, Statement, StatementTransaction } from "../core/types.ts";
import type { Warnings } from "../core/warnings.ts";
import type { ColumnRef, CsvMapping } from "./mapping.ts";

/** A CSV row wider than this is not a bank statement. */
const COLUMNS_MAX = 500;
/** Characters of one row, all its cells together: csv-parse refuses a longer row while it reads it. */
const RECORD_CHARS_MAX = 4 * FIELD_CHARS_MAX;

interface Row {
  txn: StatementTransaction;
  balance: Decimal | null;
  account: string;
}

/** Header text → index, exact first, then ignoring case and surrounding spaces. */
function resolver(header: readonly string[] | null) {
  return (ref: ColumnRef | undefined, field: string): number | undefined => {
    if (ref === undefined) return undefined;
    if (typeof ref === "number") return ref;
    if (!header)
      throw new StatementError("invalid_mapping", `mapping.${field} names column "${ref}" but has_header is false; use a 0-based index`, { field, value: ref });
    let at = header.indexOf(ref);
    if (at < 0) at = header.findIndex((h) => h.trim().toLowerCase() === ref.trim().toLowerCase());
    if (at < 0) throw new StatementError("invalid_mapping", `mapping.${field}: no column "${ref}" in the header`, { field, value: ref, line: 1 });
    return at;
  };
}

/** The delimiter that splits the first line into the most fields (quotes are not considered: headers rarely quote it). */
function sniffDelimiter(text: string): string {
  const firstLine = text.slice(0, Math.max(0, text.search(/\r?\n/)) || text.length);
  let best = ",";
  let bestCount = 0;
  for (const d of [",", ";", "\t", "|"]) {
    const count = firstLine.split(d).length - 1;
    if (count > bestCount) {
      best = d;
      bestCount = count;
    }
  }
  return best;
}

const DATE_PARTS: Readonly<Record<string, readonly ("Y" | "M" | "D")[]>> = {
  "YYYY-MM-DD": ["Y", "M", "D"],
  YYYYMMDD: ["Y", "M", "D"],
  "YYYY/MM/DD": ["Y", "M", "D"],
  "MM/DD/YYYY": ["M", "D", "Y"],
  "MM-DD-YYYY": ["M", "D", "Y"],
  "MM/DD/YY": ["M", "D", "Y"],
  "DD/MM/YYYY": ["D", "M", "Y"],
  "DD.MM.YYYY": ["D", "M", "Y"],
  "DD-MM-YYYY": ["D", "M", "Y"],
  "DD.MM.YY": ["D", "M", "Y"],
  "DD/MM/YY": ["D", "M", "Y"],
};

/** A date in the mapping's format; one-digit days and months are accepted. */
export function parseCsvDate(text: string, format: CsvMapping["date_format"]): string | null {
  const t = text.trim();
  const numbers = format === "YYYYMMDD" ? /^(\d{4})(\d\d)(\d\d)$/.exec(t)?.slice(1) : t.split(/[-/.]/);
  const order = DATE_PARTS[format];
  if (!numbers || !order || numbers.length !== 3 || !numbers.every((n) => /^\d{1,4}$/.test(n))) return null;
  const part = (p: "Y" | "M" | "D"): string => numbers[order.indexOf(p)] as string;
  const yearText = part("Y");
  const expectShortYear = format.endsWith("YY") && !format.endsWith("YYYY");
  if (expectShortYear ? yearText.length !== 2 : yearText.length !== 4) return null;
  const year = expectShortYear ? fullYear(Number(yearText)) : Number(yearText);
  return isoDate(year, Number(part("M")), Number(part("D")));
}

/**
 * A written amount: currency symbols and codes around it are dropped, `(12.34)` and a trailing minus mean
 * negative, and the mapping's separators decide the rest. Null when nothing is left to read.
 */
export function parseCsvAmount(text: string, mapping: Pick<CsvMapping, "decimal_separator" | "thousands_separator">): Decimal | null {
  let t = text.trim();
  if (t === "" || t.length > AMOUNT_CHARS_MAX) return null;
  let negative = false;
  if (t.startsWith("(") && t.endsWith(")")) {
    negative = true;
    t = t.slice(1, -1);
  }
  t = t.replace(/[A-Za-z$€£¥₣₤₹₽₩₺]+\.?/g, "").trim();
  if (t.endsWith("-")) {
    negative = !negative;
    t = t.slice(0, -1).trim();
  }
  const syntax = { decimalSeparator: mapping.decimal_separator, ...(mapping.thousands_separator ? { thousandsSeparator: mapping.thousands_separator } : {}) };
  const d = parseDecimal(spacesBeforeDigits(t, mapping.thousands_separator === " " ? " " : ""), syntax);
  if (d === null) return null;
  return negative ? negateDecimal(d) : d;
}

/**
 * Each run of white space followed by a digit replaced by `by` (digit groups written `1 234` or `EUR 12`); other
 * runs stay. A run is matched once and its end looked at, where `/\s+(?=\d)/` retried the rest of a run from
 * each of its characters: quadratic in the length of a run not followed by a digit.
 */
function spacesBeforeDigits(text: string, by: string): string {
  return text.replace(/\s+/g, (run: string, at: number) => {
    const next = text.charCodeAt(at + run.length);
    return next >= 48 && next <= 57 ? by : run;
  });
}

/** Refuses a row with a cell longer than any bank writes, before a pattern reads any of its cells. */
function checkCells(record: readonly string[], line: number): void {
  for (const [i, cell] of record.entries()) checkFieldLength(cell.length, `column ${i}`, { line, field: String(i) }, FIELD_CHARS_MAX);
}

class CsvRowReader {
  private readonly col: Record<string, number | undefined>;
  private readonly descriptionCols: number[];

  constructor(
    private readonly mapping: CsvMapping,
    header: readonly string[] | null,
    private readonly warnings: Warnings,
  ) {
    const at = resolver(header);
    this.col = {
      date: at(mapping.date, "date"),
      value_date: at(mapping.value_date, "value_date"),
      amount: at(mapping.amount, "amount"),
      debit: at(mapping.debit, "debit"),
      credit: at(mapping.credit, "credit"),
      reference: at(mapping.reference, "reference"),
      counterparty: at(mapping.counterparty, "counterparty"),
      balance: at(mapping.balance, "balance"),
      account: at(mapping.account, "account"),
      currency: at(mapping.currency_column, "currency_column"),
    };
    const descriptions = mapping.description === undefined ? [] : Array.isArray(mapping.description) ? mapping.description : [mapping.description];
    this.descriptionCols = descriptions.map((d, i) => at(d, `description.${i}`) as number);
  }

  private cell(record: readonly string[], name: string): string {
    const i = this.col[name];
    return i === undefined ? "" : (record[i] ?? "").trim();
  }

  private amountCell(record: readonly string[], name: string, line: number): Decimal | null {
    const text = this.cell(record, name);
    if (text === "") return null;
    const d = parseCsvAmount(text, this.mapping);
    if (d === null) throw invalidStatement(`column ${name} is not an amount`, { line, field: name, value: text });
    return d;
  }

  /** Signed amount: `amount` as written (or inverted), else credit − debit, each taken as a magnitude. */
  private signedAmount(record: readonly string[], line: number): Decimal {
    if (this.col.amount !== undefined) {
      const d = this.amountCell(record, "amount", line);
      if (d === null) throw invalidStatement("row has no amount", { line, field: "amount" });
      return this.mapping.invert_sign ? negateDecimal(d) : d;
    }
    const debit = this.amountCell(record, "debit", line);
    const credit = this.amountCell(record, "credit", line);
    const abs = (d: Decimal): Decimal => (isNegative(d) ? negateDecimal(d) : d);
    if (debit !== null && credit !== null && !isZero(debit) && !isZero(credit))
      throw invalidStatement("row has both a debit and a credit", {
        line,
        field: "debit",
        value: `${this.cell(record, "debit")} / ${this.cell(record, "credit")}`,
      });
    if (debit !== null && !isZero(debit)) return negateDecimal(abs(debit));
    if (credit !== null) return abs(credit);
    if (debit !== null) return debit;
    throw invalidStatement("row has neither a debit nor a credit", { line, field: "debit" });
  }

  read(record: readonly string[], line: number): Row {
    const dateText = this.cell(record, "date");
    const date = parseCsvDate(dateText, this.mapping.date_format);
    if (date === null) throw invalidStatement(`date "${dateText}" does not match ${this.mapping.date_format}`, { line, field: "date", value: dateText });
    const currency = (this.mapping.currency ?? this.cell(record, "currency")).toUpperCase();
    if (!isCurrencyCode(currency)) throw invalidStatement("row has no valid currency", { line, field: "currency_column", value: currency });
    const amount = this.signedAmount(record, line);
    const txn: StatementTransaction = {
      date,
      ...exactAmount(amount, currency, this.warnings, line),
      type: isNegative(amount) ? "debit" : "credit",
      description: this.descriptionCols
        .map((i) => (record[i] ?? "").trim())
        .filter(Boolean)
        .join(" "),
      reference: this.cell(record, "reference"),
      raw_line_no: line,
    };
    const valueText = this.cell(record, "value_date");
    const valueDate = valueText === "" ? null : parseCsvDate(valueText, this.mapping.date_format);
    if (valueText !== "" && valueDate === null)
      throw invalidStatement(`value date "${valueText}" does not match ${this.mapping.date_format}`, { line, field: "value_date", value: valueText });
    if (valueDate) txn.value_date = valueDate;
    const counterparty = this.cell(record, "counterparty");
    if (counterparty) txn.counterparty = { name: counterparty };
    return { txn, balance: this.amountCell(record, "balance", line), account: this.cell(record, "account") || this.mapping.account_id || "" };
  }
}

/** Newlines inside quoted fields: a record's first line is its last line minus these. */
function newlinesIn(record: readonly string[]): number {
  let n = 0;
  for (const f of record) for (let i = f.indexOf("\n"); i >= 0; i = f.indexOf("\n", i + 1)) n++;
  return n;
}

export function parseCsv(input: Buffer | string, mapping: CsvMapping, warnings: Warnings): Statement[] {
  const text = inputText(input, warnings, mapping.encoding);
  const delimiter = mapping.delimiter === "auto" ? sniffDelimiter(text) : mapping.delimiter;
  let header: string[] | null = null;
  let reader: CsvRowReader | undefined = mapping.has_header ? undefined : new CsvRowReader(mapping, null, warnings);
  const groups = new Map<string, Row[]>();
  try {
    parse(text, {
      delimiter,
      from_line: mapping.skip_rows + 1,
      skip_empty_lines: true,
      relax_column_count: true,
      relax_quotes: true,
      max_record_size: RECORD_CHARS_MAX,
      on_record: (record: string[], info) => {
        if (record.length > COLUMNS_MAX) throw invalidStatement(`row has more than ${COLUMNS_MAX} columns`, { line: info.lines });
        checkCells(record, info.lines - newlinesIn(record));
        if (!reader) {
          header = record;
          reader = new CsvRowReader(mapping, header, warnings);
          return null;
        }
        const row = reader.read(record, info.lines - newlinesIn(record));
        const key = `${row.account}\u0000${row.txn.currency}`;
        const list = groups.get(key);
        if (list) list.push(row);
        else groups.set(key, [row]);
        return null;
      },
    });
  } catch (error) {
    if (error instanceof StatementError) throw error;
    const e = error as Error & { lines?: number };
    throw invalidStatement(`CSV is malformed: ${e.message}`, e.lines === undefined ? {} : { line: e.lines });
  }
  if (groups.size === 0) throw invalidStatement("the CSV has no transaction rows", { line: mapping.skip_rows + 1 });
  return [...groups.values()].map((rows) => statementOf(rows, warnings));
}

/**
 * The running-balance column gives opening and closing balances when it chains: each balance is the previous one
 * plus the row's amount, in file order (oldest first) or reversed (newest first). Anything else is not trusted.
 */
function runningBalances(rows: readonly Row[]): { opening: Decimal; closing: Decimal } | null {
  const balances = rows.map((r) => r.balance);
  if (balances.some((b) => b === null)) return null;
  const amounts = rows.map((r) => parseDecimal(r.txn.amount_decimal) as Decimal);
  const chains = (order: number[]): boolean =>
    order.every(
      (idx, k) => k === 0 || isZero(subDecimal(balances[idx] as Decimal, addDecimal(balances[order[k - 1] as number] as Decimal, amounts[idx] as Decimal))),
    );
  const forward = rows.map((_, i) => i);
  for (const order of [forward, [...forward].reverse()]) {
    if (!chains(order)) continue;
    const first = order[0] as number;
    const last = order[order.length - 1] as number;
    return { opening: subDecimal(balances[first] as Decimal, amounts[first] as Decimal), closing: balances[last] as Decimal };
  }
  return null;
}

function statementOf(rows: readonly Row[], warnings: Warnings): Statement {
  const first = rows[0] as Row;
  const currency = first.txn.currency;
  const transactions = rows.map((r) => r.txn);
  const statement: Statement = {
    account: { id: first.account, currency },
    balances: [],
    transactions,
    reconciliation: reconcile(currency, undefined, undefined, transactions),
  };
  if (first.account) statement.account.number = first.account;
  if (!rows.some((r) => r.balance !== null)) return statement;
  const running = runningBalances(rows);
  if (!running) {
    warnings.add(
      "balance_not_running",
      "the balance column does not form a running balance in either row order; no opening or closing balance",
      first.txn.raw_line_no,
    );
    statement.reconciliation = { reconciles: null, difference: null, difference_decimal: null, reason: "the balance column is not a running balance" };
    return statement;
  }
  const opening: Balance = { kind: "OPENING", ...exactAmount(running.opening, currency, warnings, first.txn.raw_line_no) };
  const closing: Balance = { kind: "CLOSING", ...exactAmount(running.closing, currency, warnings, first.txn.raw_line_no) };
  statement.opening_balance = opening;
  statement.closing_balance = closing;
  statement.balances = [opening, closing];
  statement.reconciliation = reconcile(currency, opening, closing, transactions);
  return statement;
}
