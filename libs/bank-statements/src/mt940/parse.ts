import { isCurrencyCode } from "../core/currency.ts";
import { fromYymmdd, isoDate } from "../core/dates.ts";
import { negateDecimal, parseDecimal, type Decimal } from "../core/decimal.ts";
import { invalidStatement } from "../core/errors.ts";
import { exactAmount } from "../core/money.ts";
import { reconcile } from "../core/reconcile.ts";
import { findIban } from "../core/iban.ts";
import { inputText } from "../core/text.ts";
import type { Account, Balance, Statement, StatementTransaction } from "../core/types.ts";
import type { Warnings } from "../core/warnings.ts";
import { readDetails } from "./details.ts";
import { mtItems, type TagField } from "./fields.ts";

/** Balance: D/C mark, YYMMDD, currency, amount with a decimal comma. */
const BALANCE_RE = /^([CD])(\d{6})([A-Z]{3})(\d[\d]*,\d*)\s*$/;
/**
 * Statement line (field 61): value date, optional entry date (MMDD, or four spaces as some banks send),
 * mark (C, D, RC, RD, EC, ED), optional funds code letter, amount with a decimal comma, transaction type
 * (N/F/S + three characters), customer reference, optional `//` bank reference. The rest is `[^]*`, which
 * matches any character: `.*$` stopped at a line separator (U+2028) and made the engine retry every split of
 * the amount's decimals against the rest of the line, quadratic in the line's length.
 */
const LINE_RE = /^(\d{6})(\d{4}| {4})?(RC|RD|EC|ED|C|D)([A-Z])?(\d+,\d*)([NFS][A-Z0-9 ]{3})?([^]*)$/;

interface Draft {
  line: number;
  reference?: string;
  statementNo?: string;
  account?: Account;
  currency?: string;
  balances: Balance[];
  opening?: Balance;
  closing?: Balance;
  transactions: StatementTransaction[];
  /** The transaction that a following field 86 (or NS) describes; cleared by the closing balance. */
  lastTxn?: StatementTransaction;
}

function amountOf(text: string, field: TagField): Decimal {
  const d = parseDecimal(text, { decimalSeparator: "," });
  if (d === null) throw invalidStatement(`field :${field.tag}: has an invalid amount`, { line: field.line, field: field.tag, value: text });
  return d;
}

function account(field: TagField): Account {
  const raw = (field.lines[0] ?? "").trim();
  if (!raw) throw invalidStatement("field :25: (account) is empty", { line: field.line, field: "25" });
  const slash = raw.indexOf("/");
  const number = slash >= 0 ? raw.slice(slash + 1).trim() : raw;
  const acct: Account = { id: number, number, currency: "" };
  const iban = findIban(number);
  if (iban) {
    acct.iban = iban;
    acct.id = iban;
  }
  if (slash >= 0) acct.bank_id = raw.slice(0, slash).trim();
  return acct;
}

function balance(field: TagField, warnings: Warnings): Balance {
  const raw = (field.lines[0] ?? "").trim();
  const m = BALANCE_RE.exec(raw);
  if (!m) throw invalidStatement(`field :${field.tag}: is not a balance (mark, YYMMDD, currency, amount)`, { line: field.line, field: field.tag, value: raw });
  const [, mark, yymmdd, currency, amountText] = m as unknown as [string, string, string, string, string];
  const date = fromYymmdd(yymmdd);
  if (date === null) throw invalidStatement(`field :${field.tag}: has an invalid date`, { line: field.line, field: field.tag, value: yymmdd });
  const amount = amountOf(amountText, field);
  const b: Balance = { kind: field.tag, ...exactAmount(mark === "D" ? negateDecimal(amount) : amount, currency, warnings, field.line) };
  b.date = date;
  return b;
}

/** The booking day from MMDD, in the value date's year, moved across a year end when the two straddle it. */
function entryDate(valueDate: string, mmdd: string): string | null {
  const year = Number(valueDate.slice(0, 4));
  const valueMonth = Number(valueDate.slice(5, 7));
  const month = Number(mmdd.slice(0, 2));
  const day = Number(mmdd.slice(2, 4));
  let y = year;
  if (valueMonth === 12 && month === 1) y++;
  else if (valueMonth === 1 && month === 12) y--;
  return isoDate(y, month, day);
}

function statementLine(field: TagField, currency: string, warnings: Warnings): StatementTransaction {
  const raw = field.lines[0] ?? "";
  const m = LINE_RE.exec(raw);
  if (!m) throw invalidStatement("field :61: is not a statement line", { line: field.line, field: "61", value: raw });
  const [, yymmdd, mmdd, mark, , amountText, typeCode, rest] = m as unknown as [
    string,
    string,
    string | undefined,
    string,
    string | undefined,
    string,
    string | undefined,
    string,
  ];
  const valueDate = fromYymmdd(yymmdd);
  if (valueDate === null) throw invalidStatement("field :61: has an invalid value date", { line: field.line, field: "61", value: yymmdd });
  const booked = mmdd && mmdd.trim() ? entryDate(valueDate, mmdd) : valueDate;
  if (booked === null) throw invalidStatement("field :61: has an invalid entry date", { line: field.line, field: "61", value: mmdd ?? "" });
  // C and RD (reversal of a debit) add to the balance; D and RC take from it.
  const credit = mark === "C" || mark === "RD" || mark === "EC";
  const magnitude = amountOf(amountText, field);
  const [customerRef = "", bankRef] = (rest ?? "").split("//", 2).map((s) => s.trim());
  const txn: StatementTransaction = {
    date: booked,
    value_date: valueDate,
    ...exactAmount(credit ? magnitude : negateDecimal(magnitude), currency, warnings, field.line),
    type: credit ? "credit" : "debit",
    description: "",
    reference: customerRef === "NONREF" ? "" : customerRef,
    raw_line_no: field.line,
  };
  if (bankRef) txn.bank_reference = bankRef;
  if (typeCode) txn.bank_code = typeCode.trim();
  const supplementary = field.lines
    .slice(1)
    .map((l) => l.trim())
    .filter(Boolean);
  const iban = supplementary.find((s) => findIban(s) === s);
  if (iban) txn.counterparty = { account: iban };
  txn.description = supplementary.filter((s) => s !== iban).join(" ");
  return txn;
}

function attachDetails(txn: StatementTransaction, field: TagField): void {
  const details = readDetails(field.lines);
  if (details.description) txn.description = details.description;
  const counterparty = { ...txn.counterparty, ...details.counterparty };
  if (Object.keys(counterparty).length > 0) txn.counterparty = counterparty;
  if (txn.reference === "" && details.endToEndId) txn.reference = details.endToEndId;
}

function finish(draft: Draft): Statement {
  if (!draft.account) throw invalidStatement("statement has no :25: account", { line: draft.line, field: "25" });
  if (!draft.currency) throw invalidStatement("statement has no :60F:/:60M: opening balance", { line: draft.line, field: "60F" });
  const statement: Statement = {
    account: { ...draft.account, currency: draft.currency },
    balances: draft.balances,
    transactions: draft.transactions,
    reconciliation: reconcile(draft.currency, draft.opening, draft.closing, draft.transactions),
  };
  const id = [draft.reference, draft.statementNo].filter(Boolean).join("/");
  if (id) statement.statement_id = id;
  if (draft.opening) statement.opening_balance = draft.opening;
  if (draft.closing) statement.closing_balance = draft.closing;
  return statement;
}

function hasContent(d: Draft): boolean {
  return d.account !== undefined || d.balances.length > 0 || d.transactions.length > 0;
}

/** Reads every MT940 message in the text; messages without a `-` separator are split at the next `:20:`. */
export function parseMt940(input: Buffer | string, warnings: Warnings): Statement[] {
  const text = inputText(input, warnings);
  const statements: Statement[] = [];
  let draft: Draft = { line: 1, balances: [], transactions: [] };
  for (const item of mtItems(text, warnings)) {
    if (item.tag === "-") {
      if (hasContent(draft)) statements.push(finish(draft));
      draft = { line: item.line, balances: [], transactions: [] };
      continue;
    }
    const field = item as TagField;
    if (field.tag === "20" && hasContent(draft)) {
      statements.push(finish(draft));
      draft = { line: field.line, balances: [], transactions: [] };
    }
    readField(draft, field, warnings);
  }
  if (hasContent(draft)) statements.push(finish(draft));
  if (statements.length === 0) throw invalidStatement("no MT940 statement (:20:, :25:, :60F:) in the file", { line: 1 });
  return statements;
}

function readField(draft: Draft, field: TagField, warnings: Warnings): void {
  switch (field.tag) {
    case "20":
      draft.line = field.line;
      draft.reference = (field.lines[0] ?? "").trim();
      return;
    case "25":
      draft.account = account(field);
      return;
    case "28":
    case "28C":
      draft.statementNo = (field.lines[0] ?? "").trim();
      return;
    case "60F":
    case "60M": {
      const b = balance(field, warnings);
      draft.opening = b;
      draft.currency = b.currency;
      draft.balances.push(b);
      return;
    }
    case "62F":
    case "62M":
      delete draft.lastTxn;
      draft.closing = balance(field, warnings);
      draft.balances.push(draft.closing);
      return;
    case "64":
    case "65":
      draft.balances.push(balance(field, warnings));
      return;
    case "61": {
      if (!draft.currency || !isCurrencyCode(draft.currency))
        throw invalidStatement("field :61: before the :60F: opening balance", { line: field.line, field: "61" });
      const txn = statementLine(field, draft.currency, warnings);
      draft.transactions.push(txn);
      draft.lastTxn = txn;
      return;
    }
    case "86":
      if (draft.lastTxn) attachDetails(draft.lastTxn, field);
      return;
    case "NS":
      // Non-standard bank fields (Hungarian banks): the text becomes the description when nothing better exists.
      if (draft.lastTxn && draft.lastTxn.description === "")
        draft.lastTxn.description = field.lines
          .map((l) => l.trim())
          .filter(Boolean)
          .join(" ");
      return;
    default:
      return;
  }
}
