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

export function parseBai2(input: Buffer | string, warnings: Warnings): Statement[] {
  const text = inputText(input, warnings);
  const statements: Statement[] = [];
  let group: Group | undefined;
  let account: AccountDraft | undefined;
  let fileTotal = 0n;
  let fileRecords = 0;
  let groups = 0;
  let sawHeader = false;

  const closeAccount = (): void => {
    if (!account) return;
    const s = account.statement;
    s.reconciliation = reconcile(s.account.currency, s.opening_balance, s.closing_balance, s.transactions);
    statements.push(s);
    account = undefined;
  };

  for (const r of bai2Records(text, warnings)) {
    fileRecords += r.physical;
    if (group) group.records += r.physical;
    if (account) account.records += r.physical;
    switch (r.code) {
      case "01":
        sawHeader = true;
        if (field(r, 7) !== "" && field(r, 7) !== "2") warnings.add("unexpected_version", `file version ${field(r, 7)}; read as BAI2`, r.line);
        break;
      case "02": {
        closeAccount();
        const asOf = fromYymmdd(field(r, 3));
        if (asOf === null) throw invalidStatement("group header has an invalid as-of date", { line: r.line, field: "as_of_date", value: field(r, 3) });
        const currency = field(r, 5).toUpperCase() || DEFAULT_CURRENCY;
        if (!isCurrencyCode(currency)) throw invalidStatement("group header has an invalid currency", { line: r.line, field: "currency", value: currency });
        group = { currency, asOf, line: r.line, total: 0n, records: r.physical, accounts: 0 };
        groups++;
        break;
      }
      case "03":
        closeAccount();
        if (!group) throw invalidStatement("account record outside a group", { line: r.line });
        account = openAccount(r, group, warnings);
        group.accounts++;
        break;
      case "16":
        if (!account || !group) throw invalidStatement("transaction detail outside an account", { line: r.line });
        account.statement.transactions.push(detail(r, account, group, warnings));
        account.total += amountOf(field(r, 1), r, "amount");
        break;
      case "49":
        if (!account || !group) throw invalidStatement("account trailer outside an account", { line: r.line });
        checkTotal(warnings, "account", r, account.total, account.records, 0, 1);
        group.total += account.total;
        closeAccount();
        break;
      case "98":
        closeAccount();
        if (!group) throw invalidStatement("group trailer outside a group", { line: r.line });
        checkTotal(warnings, "group", r, group.total, group.records, 0, 2);
        if (field(r, 1) !== "" && Number(field(r, 1)) !== group.accounts)
          warnings.add("account_count_mismatch", `group trailer counts ${field(r, 1)} accounts, ${group.accounts} were read`, r.line);
        fileTotal += group.total;
        group = undefined;
        break;
      case "99":
        closeAccount();
        checkTotal(warnings, "file", r, fileTotal, fileRecords, 0, 2);
        if (field(r, 1) !== "" && Number(field(r, 1)) !== groups)
          warnings.add("group_count_mismatch", `file trailer counts ${field(r, 1)} groups, ${groups} were read`, r.line);
        break;
      default:
        break;
    }
  }
  closeAccount();
  if (!sawHeader) throw invalidStatement("no BAI2 file header (01 record)", { line: 1 });
  return statements;
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
