import { isCurrencyCode, minorUnits } from "../core/currency.ts";
import { fromYymmdd } from "../core/dates.ts";
import type { Decimal } from "../core/decimal.ts";
import { invalidStatement } from "../core/errors.ts";
import { excerpt } from "../core/limits.ts";
import { exactAmount } from "../core/money.ts";
import { reconcile } from "../core/reconcile.ts";
import { inputText } from "../core/text.ts";
import type { Balance, Statement, StatementTransaction } from "../core/types.ts";
import type { Warnings } from "../core/warnings.ts";
import { bai2Records, detailTextIndex, type Bai2Record } from "./records.ts";

/** BAI2's default currency when a group leaves it blank. */
const DEFAULT_CURRENCY = "USD";
/** Status codes (balances) are 001–099; the opening and closing ledger balances reconcile the details. */
const OPENING_LEDGER = "010";
const CLOSING_LEDGER = "015";

interface Group {
  currency: string;
  asOf: string;
  line: number;
  total: bigint;
  records: number;
  accounts: number;
}

interface AccountDraft {
  statement: Statement;
  exponent: number;
  total: bigint;
  records: number;
  line: number;
}

const field = (r: Bai2Record, i: number): string => (r.fields[i] ?? "").trim();

/** Digits of an amount or control total; a longer number is no amount, and making a bigint of it is quadratic. */
const AMOUNT_DIGITS_MAX = 30;

/** An optionally signed integer of at most AMOUNT_DIGITS_MAX digits, or null. */
function integerOf(text: string): bigint | null {
  const t = text.trim();
  if (t.length > AMOUNT_DIGITS_MAX + 1 || !/^[+-]?\d+$/.test(t)) return null;
  return BigInt(t);
}

/** A BAI2 amount: an integer in the currency's minor units (the decimals are implied), optionally signed. */
function amountOf(text: string, r: Bai2Record, name: string): bigint {
  const n = integerOf(text);
  if (n === null) throw invalidStatement(`record ${r.code} has an invalid ${name}`, { line: r.line, field: name, value: excerpt(text) });
  return n;
}

function decimalOf(minor: bigint, exponent: number): Decimal {
  return { units: minor, scale: exponent };
}

/** Summary and status items of an 03 record: type code, amount, item count, funds type (and its extra fields). */
function summaryItems(r: Bai2Record): { code: string; amount: bigint | null }[] {
  const items: { code: string; amount: bigint | null }[] = [];
  let i = 2;
  while (i < r.fields.length) {
    const code = field(r, i);
    const amountText = field(r, i + 1);
    const funds = field(r, i + 3).toUpperCase();
    if (code !== "") items.push({ code, amount: amountText === "" ? null : amountOf(amountText, r, `amount of ${code}`) });
    i += 4;
    if (funds === "V") i += 2;
    else if (funds === "S") i += 3;
    else if (funds === "D") i += 1 + 2 * Number(field(r, i) || "0");
  }
  return items;
}

function checkTotal(warnings: Warnings, what: string, r: Bai2Record, expectedTotal: bigint, expectedRecords: number, totalAt: number, recordsAt: number): void {
  const total = field(r, totalAt);
  const written = integerOf(total);
  if (written !== null && written !== expectedTotal) {
    warnings.add("control_total_mismatch", `${what} control total ${total} differs from the records' sum ${expectedTotal}`, r.line);
  }
  const count = field(r, recordsAt);
  if (count !== "" && Number(count) !== expectedRecords) {
    warnings.add("record_count_mismatch", `${what} record count ${count} differs from the ${expectedRecords} records read`, r.line);
  }
}

/** What the reader knows while it walks the records: the open group and account, and the file's running totals. */
interface FileState {
  warnings: Warnings;
  statements: Statement[];
  group: Group | undefined;
  account: AccountDraft | undefined;
  fileTotal: bigint;
  fileRecords: number;
  groups: number;
  sawHeader: boolean;
}

function closeAccount(st: FileState): void {
  const account = st.account;
  if (!account) return;
  const s = account.statement;
  s.reconciliation = reconcile(s.account.currency, s.opening_balance, s.closing_balance, s.transactions);
  st.statements.push(s);
  st.account = undefined;
}

function openGroup(st: FileState, r: Bai2Record): void {
  closeAccount(st);
  const asOf = fromYymmdd(field(r, 3));
  if (asOf === null) throw invalidStatement("group header has an invalid as-of date", { line: r.line, field: "as_of_date", value: field(r, 3) });
  const currency = field(r, 5).toUpperCase() || DEFAULT_CURRENCY;
  if (!isCurrencyCode(currency)) throw invalidStatement("group header has an invalid currency", { line: r.line, field: "currency", value: currency });
  st.group = { currency, asOf, line: r.line, total: 0n, records: r.physical, accounts: 0 };
  st.groups++;
}

function closeGroup(st: FileState, r: Bai2Record): void {
  closeAccount(st);
  const group = st.group;
  if (!group) throw invalidStatement("group trailer outside a group", { line: r.line });
  checkTotal(st.warnings, "group", r, group.total, group.records, 0, 2);
  if (field(r, 1) !== "" && Number(field(r, 1)) !== group.accounts)
    st.warnings.add("account_count_mismatch", `group trailer counts ${field(r, 1)} accounts, ${group.accounts} were read`, r.line);
  st.fileTotal += group.total;
  st.group = undefined;
}

/** One record of the file, by its type code (01 file header … 99 file trailer). */
function readRecord(st: FileState, r: Bai2Record): void {
  const { warnings } = st;
  switch (r.code) {
    case "01":
      st.sawHeader = true;
      if (field(r, 7) !== "" && field(r, 7) !== "2") warnings.add("unexpected_version", `file version ${field(r, 7)}; read as BAI2`, r.line);
      return;
    case "02":
      return openGroup(st, r);
    case "03":
      closeAccount(st);
      if (!st.group) throw invalidStatement("account record outside a group", { line: r.line });
      st.account = openAccount(r, st.group, warnings);
      st.group.accounts++;
      return;
    case "16":
      if (!st.account || !st.group) throw invalidStatement("transaction detail outside an account", { line: r.line });
      st.account.statement.transactions.push(detail(r, st.account, st.group, warnings));
      st.account.total += amountOf(field(r, 1), r, "amount");
      return;
    case "49":
      if (!st.account || !st.group) throw invalidStatement("account trailer outside an account", { line: r.line });
      checkTotal(warnings, "account", r, st.account.total, st.account.records, 0, 1);
      st.group.total += st.account.total;
      return closeAccount(st);
    case "98":
      return closeGroup(st, r);
    case "99":
      closeAccount(st);
      checkTotal(warnings, "file", r, st.fileTotal, st.fileRecords, 0, 2);
      if (field(r, 1) !== "" && Number(field(r, 1)) !== st.groups)
        warnings.add("group_count_mismatch", `file trailer counts ${field(r, 1)} groups, ${st.groups} were read`, r.line);
      return;
    default:
      return;
  }
}

export function parseBai2(input: Buffer | string, warnings: Warnings): Statement[] {
  const text = inputText(input, warnings);
  const st: FileState = { warnings, statements: [], group: undefined, account: undefined, fileTotal: 0n, fileRecords: 0, groups: 0, sawHeader: false };
  for (const r of bai2Records(text, warnings)) {
    st.fileRecords += r.physical;
    if (st.group) st.group.records += r.physical;
    if (st.account) st.account.records += r.physical;
    readRecord(st, r);
  }
  closeAccount(st);
  if (!st.sawHeader) throw invalidStatement("no BAI2 file header (01 record)", { line: 1 });
  return st.statements;
}

function openAccount(r: Bai2Record, group: Group, warnings: Warnings): AccountDraft {
  const number = field(r, 0);
  if (number === "") throw invalidStatement("account record has no account number", { line: r.line, field: "account_number" });
  const currency = field(r, 1).toUpperCase() || group.currency;
  if (!isCurrencyCode(currency)) throw invalidStatement("account record has an invalid currency", { line: r.line, field: "currency", value: currency });
  const exponent = minorUnits(currency) ?? 0;
  const balances: Balance[] = [];
  let total = 0n;
  for (const item of summaryItems(r)) {
    if (item.amount === null) continue;
    total += item.amount;
    if (Number(item.code) >= 100) continue;
    balances.push({ kind: item.code, ...exactAmount(decimalOf(item.amount, exponent), currency, warnings, r.line), date: group.asOf });
  }
  const statement: Statement = {
    account: { id: number, number, currency },
    balances,
    transactions: [],
    reconciliation: { reconciles: null, difference: null, difference_decimal: null },
  };
  const opening = balances.find((b) => b.kind === OPENING_LEDGER);
  const closing = balances.find((b) => b.kind === CLOSING_LEDGER);
  if (opening) statement.opening_balance = opening;
  if (closing) statement.closing_balance = closing;
  return { statement, exponent, total, records: r.physical, line: r.line };
}

/** Detail type codes 100–399 are credits and 400–699 debits; other ranges are bank-specific and refused. */
function direction(code: number, r: Bai2Record): "credit" | "debit" {
  if (code >= 100 && code <= 399) return "credit";
  if (code >= 400 && code <= 699) return "debit";
  throw invalidStatement(`detail type code ${code} is bank-specific; its direction (credit or debit) is unknown`, {
    line: r.line,
    field: "type_code",
    value: String(code),
  });
}

function detail(r: Bai2Record, account: AccountDraft, group: Group, warnings: Warnings): StatementTransaction {
  const code = field(r, 0);
  if (!/^\d{3}$/.test(code)) throw invalidStatement("transaction detail has an invalid type code", { line: r.line, field: "type_code", value: code });
  const type = direction(Number(code), r);
  const magnitude = amountOf(field(r, 1), r, "amount");
  if (magnitude < 0n)
    throw invalidStatement("transaction detail amount is signed; the type code gives the direction", { line: r.line, field: "amount", value: field(r, 1) });
  const signed = decimalOf(type === "credit" ? magnitude : -magnitude, account.exponent);
  const textAt = detailTextIndex(r.fields) ?? r.fields.length;
  const funds = field(r, 2).toUpperCase();
  const txn: StatementTransaction = {
    date: group.asOf,
    ...exactAmount(signed, account.statement.account.currency, warnings, r.line),
    type,
    description: (r.fields[textAt] ?? "").trim().replace(/\s+/g, " "),
    reference: field(r, textAt - 1),
    bank_code: code,
    raw_line_no: r.line,
  };
  if (funds === "V") {
    const valueDate = fromYymmdd(field(r, 3));
    if (valueDate) txn.value_date = valueDate;
  }
  const bankRef = field(r, textAt - 2);
  if (bankRef) txn.bank_reference = bankRef;
  return txn;
}
