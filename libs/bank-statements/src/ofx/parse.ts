import { fromYyyymmdd } from "../core/dates.ts";
import { isNegative, parseDecimal, type Decimal } from "../core/decimal.ts";
import { invalidStatement } from "../core/errors.ts";
import { exactAmount } from "../core/money.ts";
import { decodeGuess, hasNonAscii } from "../core/text.ts";
import { isCurrencyCode } from "../core/currency.ts";
import { findIban } from "../core/iban.ts";
import type { Account, Balance, Counterparty, Statement, StatementTransaction } from "../core/types.ts";
import type { Warnings } from "../core/warnings.ts";
import { OfxScanner, type OfxEvents } from "./scanner.ts";

const STATEMENT_AGGREGATES = new Set(["STMTRS", "CCSTMTRS"]);
const ACCOUNT_FROM = new Set(["BANKACCTFROM", "CCACCTFROM"]);
const ACCOUNT_TO = new Set(["BANKACCTTO", "CCACCTTO"]);
const BALANCE_AGGREGATES = new Set(["LEDGERBAL", "AVAILBAL"]);

interface Header {
  charset?: string;
  encoding?: string;
  version?: string;
}

/** The OFX header (SGML `KEY:VALUE` lines or the XML `<?OFX …?>` attributes) as far as decoding needs it. */
function readHeader(head: string): Header {
  const header: Header = {};
  const pick = (key: string): string | undefined => new RegExp(`(?:^|\\s|\\n)${key}\\s*[:=]\\s*"?([^"\\s\\r\\n?]+)`, "i").exec(head)?.[1];
  const charset = pick("CHARSET");
  const encoding = pick("ENCODING") ?? /<\?xml[^>]*encoding="([^"]+)"/i.exec(head)?.[1];
  const version = pick("VERSION");
  if (charset !== undefined) header.charset = charset;
  if (encoding !== undefined) header.encoding = encoding;
  if (version !== undefined) header.version = version;
  return header;
}

function declaredSingleByte(header: Header): string | null {
  const charset = header.charset?.toUpperCase();
  if (charset && charset !== "NONE" && charset !== "UTF-8") return charset === "1252" ? "windows-1252" : charset === "ISO-8859-1" ? "latin1" : charset;
  const encoding = header.encoding?.toUpperCase();
  if (encoding && encoding !== "UTF-8" && encoding !== "UNICODE") return encoding === "USASCII" || encoding === "US-ASCII" ? "us-ascii" : encoding;
  return null;
}

/**
 * Bytes → text. Files that say 1252 or US-ASCII but hold UTF-8 are common (the body is valid UTF-8 with
 * multi-byte characters): UTF-8 wins and a warning names the mismatch; bytes that are not UTF-8 are read in
 * the declared single-byte charset.
 */
function decodeOfx(input: Buffer | string, warnings: Warnings): string {
  const headBytes = typeof input === "string" ? input.slice(0, 2048) : input.subarray(0, 2048).toString("latin1");
  const declared = declaredSingleByte(readHeader(headBytes));
  const text = typeof input === "string" ? input : decodeGuess(input, warnings, declared === "us-ascii" || declared === null ? "windows-1252" : declared);
  if (typeof input !== "string" && declared !== null && !warnings.list.some((w) => w.code === "encoding_fallback") && hasNonAscii(text)) {
    warnings.add("charset_mismatch", `the header declares ${declared} but the body is UTF-8; read as UTF-8`);
  }
  return text;
}

interface TxnDraft {
  line: number;
  fields: Map<string, string>;
  counterparty: Counterparty;
  currency?: string;
}

interface StatementDraft {
  line: number;
  currency?: string;
  account: Map<string, string>;
  creditCard: boolean;
  balances: Balance[];
  transactions: StatementTransaction[];
}

/** Builds statements from scanner events; knows OFX's aggregates, ignores everything else. */
class OfxStatementBuilder implements OfxEvents {
  readonly statements: Statement[] = [];
  private readonly path: string[] = [];
  private stmt: StatementDraft | undefined;
  private txn: TxnDraft | undefined;
  private balance: { kind: string; line: number; fields: Map<string, string> } | undefined;
  sawInvestment = false;

  constructor(private readonly warnings: Warnings) {}

  open(name: string, line: number): void {
    this.path.push(name);
    if (STATEMENT_AGGREGATES.has(name)) this.stmt = { line, account: new Map(), creditCard: name === "CCSTMTRS", balances: [], transactions: [] };
    else if (name === "INVSTMTRS") this.sawInvestment = true;
    else if (name === "STMTTRN" && this.stmt) this.txn = { line, fields: new Map(), counterparty: {} };
    else if (BALANCE_AGGREGATES.has(name) && this.stmt && !this.txn) this.balance = { kind: name, line, fields: new Map() };
  }

  leaf(name: string, value: string, line: number): void {
    const parent = this.path[this.path.length - 1] ?? "";
    if (this.balance && parent === this.balance.kind) this.balance.fields.set(name, value);
    else if (this.txn) this.txnLeaf(parent, name, value);
    else if (this.stmt && STATEMENT_AGGREGATES.has(parent) && name === "CURDEF") this.stmt.currency = value.toUpperCase();
    else if (this.stmt && ACCOUNT_FROM.has(parent)) this.stmt.account.set(name, value);
    else if (name === "TRNAMT" || name === "BALAMT") this.warnings.add("ignored_amount", `${name} outside a statement transaction or balance is ignored`, line);
  }

  private txnLeaf(parent: string, name: string, value: string): void {
    const txn = this.txn as TxnDraft;
    if (parent === "STMTTRN") txn.fields.set(name, value);
    else if (ACCOUNT_TO.has(parent) && name === "ACCTID") txn.counterparty.account = value;
    else if (ACCOUNT_TO.has(parent) && name === "BANKID") txn.counterparty.bank_id = value;
    else if (parent === "PAYEE" && name === "NAME") txn.counterparty.name = value;
    else if (parent === "CURRENCY" && name === "CURSYM") txn.currency = value.toUpperCase();
  }

  close(name: string, line: number): void {
    this.path.pop();
    if (name === "STMTTRN" && this.txn) this.finishTransaction(this.txn);
    else if (this.balance && name === this.balance.kind) this.finishBalance(line);
    else if (STATEMENT_AGGREGATES.has(name) && this.stmt) this.finishStatement(this.stmt);
  }

  private currency(): string {
    const stmt = this.stmt as StatementDraft;
    if (!stmt.currency || !isCurrencyCode(stmt.currency))
      throw invalidStatement("statement has no valid CURDEF currency", {
        line: stmt.line,
        field: "CURDEF",
        ...(stmt.currency ? { value: stmt.currency } : {}),
      });
    return stmt.currency;
  }

  private finishTransaction(draft: TxnDraft): void {
    this.txn = undefined;
    const f = draft.fields;
    const amountText = f.get("TRNAMT");
    const amount = amountText === undefined ? null : parseOfxAmount(amountText);
    if (amount === null)
      throw invalidStatement("transaction has no valid TRNAMT", { line: draft.line, field: "TRNAMT", ...(amountText ? { value: amountText } : {}) });
    const posted = f.get("DTPOSTED");
    const date = posted === undefined ? null : fromYyyymmdd(posted);
    if (date === null)
      throw invalidStatement("transaction has no valid DTPOSTED", { line: draft.line, field: "DTPOSTED", ...(posted ? { value: posted } : {}) });
    const currency = draft.currency ?? this.currency();
    const valueDate = f.has("DTAVAIL") ? fromYyyymmdd(f.get("DTAVAIL") as string) : null;
    const reference = f.get("FITID") ?? f.get("REFNUM") ?? f.get("CHECKNUM") ?? "";
    const name = f.get("NAME");
    if (name !== undefined && draft.counterparty.name === undefined) draft.counterparty.name = name;
    const txn: StatementTransaction = {
      date,
      ...exactAmount(amount, currency, this.warnings, draft.line),
      type: isNegative(amount) ? "debit" : "credit",
      description: describe(name, f.get("MEMO")),
      reference,
      raw_line_no: draft.line,
    };
    if (valueDate) txn.value_date = valueDate;
    const bankRef = f.get("REFNUM") ?? f.get("CHECKNUM");
    if (bankRef !== undefined && bankRef !== reference) txn.bank_reference = bankRef;
    if (Object.keys(draft.counterparty).length > 0) txn.counterparty = draft.counterparty;
    const code = f.get("TRNTYPE");
    if (code !== undefined) txn.bank_code = code;
    (this.stmt as StatementDraft).transactions.push(txn);
  }

  private finishBalance(line: number): void {
    const draft = this.balance as NonNullable<typeof this.balance>;
    this.balance = undefined;
    const text = draft.fields.get("BALAMT");
    const amount = text === undefined ? null : parseOfxAmount(text);
    if (amount === null)
      throw invalidStatement(`${draft.kind} has no valid BALAMT`, { line: draft.line || line, field: "BALAMT", ...(text ? { value: text } : {}) });
    const balance: Balance = { kind: draft.kind, ...exactAmount(amount, this.currency(), this.warnings, draft.line) };
    const asOf = draft.fields.get("DTASOF");
    const date = asOf === undefined ? null : fromYyyymmdd(asOf);
    if (date) balance.date = date;
    (this.stmt as StatementDraft).balances.push(balance);
  }

  private finishStatement(draft: StatementDraft): void {
    const currency = this.currency();
    this.stmt = undefined;
    const acctId = draft.account.get("ACCTID");
    if (!acctId) throw invalidStatement("statement has no ACCTID", { line: draft.line, field: "ACCTID" });
    const account: Account = { id: acctId, number: acctId, currency };
    const iban = findIban(acctId);
    if (iban) account.iban = iban;
    const bankId = draft.account.get("BANKID");
    if (bankId !== undefined) account.bank_id = bankId;
    const branchId = draft.account.get("BRANCHID");
    if (branchId !== undefined) account.branch_id = branchId;
    // Credit-card accounts (CCACCTFROM) have no ACCTTYPE in OFX.
    account.account_type = draft.account.get("ACCTTYPE") ?? (draft.creditCard ? "CREDITCARD" : "UNKNOWN");
    const closing = draft.balances.find((b) => b.kind === "LEDGERBAL");
    const statement: Statement = {
      account,
      balances: draft.balances,
      transactions: draft.transactions,
      // OFX has no opening balance, so the sum of the lines cannot be checked against anything.
      reconciliation: { reconciles: null, difference: null, difference_decimal: null, reason: "OFX statements carry no opening balance" },
    };
    if (closing) statement.closing_balance = closing;
    this.statements.push(statement);
  }
}

/** NAME is the payee and MEMO the detail; when one repeats the other, the longer says everything. */
function describe(name: string | undefined, memo: string | undefined): string {
  if (name === undefined) return memo ?? "";
  if (memo === undefined || memo === name) return name;
  if (memo.startsWith(name)) return memo;
  if (name.startsWith(memo)) return name;
  return `${name} / ${memo}`;
}

/** OFX amounts use a point; some European banks send a decimal comma, which is unambiguous here (no grouping in OFX). */
function parseOfxAmount(text: string): Decimal | null {
  const t = text.trim();
  return parseDecimal(t, { decimalSeparator: t.includes(",") && !t.includes(".") ? "," : "." });
}

/** The 1-based line of the `<OFX>` root: the header lines before it count. */
function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

export function parseOfx(input: Buffer | string, warnings: Warnings): Statement[] {
  const text = decodeOfx(input, warnings);
  const root = /<OFX>/i.exec(text);
  if (!root) throw invalidStatement("no <OFX> root element", { line: 1 });
  const builder = new OfxStatementBuilder(warnings);
  new OfxScanner(text, root.index, lineOf(text, root.index), builder).run();
  if (builder.sawInvestment) warnings.add("investment_statement_skipped", "investment statements (INVSTMTRS) are not read");
  if (builder.statements.length === 0)
    throw invalidStatement("no bank or credit-card statement (STMTRS/CCSTMTRS) in the file", { line: lineOf(text, root.index) });
  return builder.statements;
}
