import { SaxesParser, type SaxesTagPlain } from "saxes";
import { isCurrencyCode } from "../core/currency.ts";
import { camtVersion } from "../core/detect.ts";
import { fromIsoDateTime } from "../core/dates.ts";
import { negateDecimal, parseDecimal } from "../core/decimal.ts";
import { invalidStatement, StatementError } from "../core/errors.ts";
import { findIban } from "../core/iban.ts";
import { checkFieldLength, NAME_CHARS_MAX, NESTING_DEPTH_MAX } from "../core/limits.ts";
import { exactAmount } from "../core/money.ts";
import { reconcile } from "../core/reconcile.ts";
import { decodeGuess } from "../core/text.ts";
import type { Account, Balance, Counterparty, Statement, StatementTransaction } from "../core/types.ts";
import type { Warnings } from "../core/warnings.ts";

/** Remittance text can repeat per transaction detail; past this many characters the rest is not description. */
const DESCRIPTION_CHARS_MAX = 1000;

interface AmountDraft {
  text?: string;
  currency?: string;
  indicator?: string;
}

interface BalanceDraft extends AmountDraft {
  line: number;
  kind?: string;
  date?: string;
}

interface EntryDraft extends AmountDraft {
  line: number;
  status?: string;
  booked?: string;
  value?: string;
  bankRef?: string;
  entryRef?: string;
  code: string[];
  additional?: string;
  txDetails: number;
  endToEnd?: string;
  creditorRef?: string;
  unstructured: string[];
  /** Characters of `unstructured` joined with spaces. */
  unstructuredChars: number;
  txAdditional?: string;
  debtor: Counterparty;
  creditor: Counterparty;
}

interface StatementDraft {
  line: number;
  id?: string;
  iban?: string;
  otherId?: string;
  currency?: string;
  name?: string;
  bic?: string;
  balances: Balance[];
  transactions: StatementTransaction[];
}

/** The name without its namespace prefix: camt files use both default and prefixed namespaces. */
function local(name: string): string {
  const colon = name.indexOf(":");
  return colon < 0 ? name : name.slice(colon + 1);
}

/** The XML declaration's encoding decides how bytes that are not UTF-8 are read. */
function decodeXml(input: Buffer | string, warnings: Warnings): string {
  if (typeof input === "string") return input;
  const declared = /<\?xml[^>]*encoding=["']([^"']+)["']/i.exec(input.subarray(0, 200).toString("latin1"))?.[1];
  return decodeGuess(input, warnings, declared && !/^utf-?8$/i.test(declared) ? declared : "windows-1252");
}

/**
 * A streaming reader: the SAX parser hands over one element at a time and only the fields a statement needs are
 * kept, so memory follows the number of entries, never the size of a document tree.
 */
class CamtReader {
  readonly statements: Statement[] = [];
  private readonly path: string[] = [];
  private text = "";
  private stmt: StatementDraft | undefined;
  private stmtDepth = 0;
  private bal: BalanceDraft | undefined;
  private balDepth = 0;
  private entry: EntryDraft | undefined;
  private entryDepth = 0;

  constructor(private readonly warnings: Warnings) {}

  open(tag: SaxesTagPlain, line: number): void {
    const name = local(tag.name);
    // Each closing tag joins the path below its entry: the path's depth and names are bounded so that stays short.
    checkFieldLength(name.length, "an element name", { line, field: name.slice(0, 40) }, NAME_CHARS_MAX);
    if (this.path.length >= NESTING_DEPTH_MAX)
      throw invalidStatement(`elements nest deeper than ${NESTING_DEPTH_MAX} levels`, { line, field: name.slice(0, 40) });
    this.path.push(name);
    this.text = "";
    const depth = this.path.length;
    if (name === "Stmt" && this.path[depth - 2] === "BkToCstmrStmt") {
      this.stmt = { line, balances: [], transactions: [] };
      this.stmtDepth = depth;
    } else if (this.stmt && name === "Bal" && depth === this.stmtDepth + 1) {
      this.bal = { line };
      this.balDepth = depth;
    } else if (this.stmt && name === "Ntry" && depth === this.stmtDepth + 1) {
      this.entry = { line, code: [], txDetails: 0, unstructured: [], unstructuredChars: 0, debtor: {}, creditor: {} };
      this.entryDepth = depth;
    } else if (this.entry && name === "TxDtls") {
      this.entry.txDetails++;
    }
    if (name === "Amt") {
      const target = this.bal && depth === this.balDepth + 1 ? this.bal : this.entry && depth === this.entryDepth + 1 ? this.entry : undefined;
      const ccy = tag.attributes["Ccy"];
      if (target && typeof ccy === "string") target.currency = ccy.toUpperCase();
    }
  }

  addText(text: string, line: number): void {
    this.text += text;
    checkFieldLength(this.text.length, `the text of ${this.path[this.path.length - 1] ?? "the document"}`, { line });
  }

  close(): void {
    const depth = this.path.length;
    const text = this.text.trim();
    this.text = "";
    if (this.entry && depth > this.entryDepth) this.entryField(this.path.slice(this.entryDepth).join("/"), text);
    else if (this.bal && depth > this.balDepth) this.balanceField(this.path.slice(this.balDepth).join("/"), text);
    else if (this.stmt && depth > this.stmtDepth && !this.bal && !this.entry) this.statementField(this.path.slice(this.stmtDepth).join("/"), text);
    if (this.entry && depth === this.entryDepth) this.finishEntry(this.entry);
    else if (this.bal && depth === this.balDepth) this.finishBalance(this.bal);
    else if (this.stmt && depth === this.stmtDepth) this.finishStatement(this.stmt);
    this.path.pop();
  }

  private statementField(rel: string, text: string): void {
    const s = this.stmt as StatementDraft;
    if (rel === "Id") s.id = text;
    else if (rel === "Acct/Id/IBAN") s.iban = text;
    else if (rel === "Acct/Id/Othr/Id") s.otherId = text;
    else if (rel === "Acct/Ccy") s.currency = text.toUpperCase();
    else if (rel === "Acct/Nm" || (rel === "Acct/Ownr/Nm" && s.name === undefined)) s.name = text;
    else if (rel === "Acct/Svcr/FinInstnId/BIC" || rel === "Acct/Svcr/FinInstnId/BICFI") s.bic = text;
  }

  private balanceField(rel: string, text: string): void {
    const b = this.bal as BalanceDraft;
    if (rel === "Tp/CdOrPrtry/Cd" || (rel === "Tp/CdOrPrtry/Prtry" && b.kind === undefined)) b.kind = text;
    else if (rel === "Amt") b.text = text;
    else if (rel === "CdtDbtInd") b.indicator = text;
    else if (rel === "Dt/Dt" || rel === "Dt/DtTm") b.date = text;
  }

  private entryField(rel: string, text: string): void {
    const e = this.entry as EntryDraft;
    switch (rel) {
      case "Amt":
        e.text = text;
        return;
      case "CdtDbtInd":
        e.indicator = text;
        return;
      case "Sts":
      case "Sts/Cd":
        if (text) e.status = text;
        return;
      case "BookgDt/Dt":
      case "BookgDt/DtTm":
        e.booked = text;
        return;
      case "ValDt/Dt":
      case "ValDt/DtTm":
        e.value = text;
        return;
      case "AcctSvcrRef":
        e.bankRef = text;
        return;
      case "NtryRef":
        e.entryRef = text;
        return;
      case "BkTxCd/Domn/Cd":
      case "BkTxCd/Domn/Fmly/Cd":
      case "BkTxCd/Domn/Fmly/SubFmlyCd":
        e.code.push(text);
        return;
      case "BkTxCd/Prtry/Cd":
        if (e.code.length === 0) e.code.push(text);
        return;
      case "AddtlNtryInf":
        e.additional = text;
        return;
      default:
        if (rel.startsWith("NtryDtls/TxDtls/")) this.detailField(e, rel.slice(16), text);
    }
  }

  /** Only the first transaction detail names the reference and parties; remittance text comes from all. */
  private detailField(e: EntryDraft, rel: string, text: string): void {
    if (rel === "RmtInf/Ustrd") {
      // Counted as kept, not joined again for every element: an entry may carry thousands of them.
      if (e.unstructuredChars < DESCRIPTION_CHARS_MAX) {
        e.unstructuredChars += (e.unstructured.length > 0 ? 1 : 0) + text.length;
        e.unstructured.push(text);
      }
      return;
    }
    if (e.txDetails > 1) return;
    if (rel === "Refs/EndToEndId" && text !== "NOTPROVIDED") e.endToEnd = text;
    else if (rel === "RmtInf/Strd/CdtrRefInf/Ref") e.creditorRef = text;
    else if (rel === "AddtlTxInf") e.txAdditional = text;
    else this.partyField(e, rel, text);
  }

  private partyField(e: EntryDraft, rel: string, text: string): void {
    const m =
      /^RltdPties\/(Dbtr|Cdtr)(Acct)?\/(?:Pty\/)?(Nm|Id\/IBAN|Id\/Othr\/Id)$/.exec(rel) ?? /^RltdAgts\/(Dbtr|Cdtr)(Agt)\/FinInstnId\/(BICFI|BIC)$/.exec(rel);
    if (!m) return;
    const party = m[1] === "Dbtr" ? e.debtor : e.creditor;
    if (m[2] === "Agt") party.bank_id = text;
    else if (m[2] === "Acct") party.account = text;
    else if (m[3] === "Nm") party.name = text;
  }

  private amount(d: AmountDraft, what: string, line: number) {
    const decimal = d.text === undefined ? null : parseDecimal(d.text);
    if (decimal === null || decimal.units < 0n)
      throw invalidStatement(`${what} has no valid Amt`, { line, field: "Amt", ...(d.text ? { value: d.text } : {}) });
    if (!d.currency || !isCurrencyCode(d.currency))
      throw invalidStatement(`${what} Amt has no valid Ccy`, { line, field: "Amt/@Ccy", ...(d.currency ? { value: d.currency } : {}) });
    if (d.indicator !== "CRDT" && d.indicator !== "DBIT")
      throw invalidStatement(`${what} has no CdtDbtInd (CRDT or DBIT)`, { line, field: "CdtDbtInd", ...(d.indicator ? { value: d.indicator } : {}) });
    return { signed: d.indicator === "DBIT" ? negateDecimal(decimal) : decimal, currency: d.currency };
  }

  private finishBalance(b: BalanceDraft): void {
    this.bal = undefined;
    const { signed, currency } = this.amount(b, "balance", b.line);
    if (!b.kind) throw invalidStatement("balance has no type code", { line: b.line, field: "Tp/CdOrPrtry/Cd" });
    const balance: Balance = { kind: b.kind, ...exactAmount(signed, currency, this.warnings, b.line) };
    const date = b.date === undefined ? null : fromIsoDateTime(b.date);
    if (date) balance.date = date;
    (this.stmt as StatementDraft).balances.push(balance);
  }

  private finishEntry(e: EntryDraft): void {
    this.entry = undefined;
    if (e.status !== undefined && e.status !== "BOOK") {
      this.warnings.add("entry_not_booked", `entry with status ${e.status} is not a booked transaction; skipped`, e.line);
      return;
    }
    const { signed, currency } = this.amount(e, "entry", e.line);
    const date = fromIsoDateTime(e.booked ?? e.value ?? "");
    if (date === null) throw invalidStatement("entry has no valid BookgDt", { line: e.line, field: "BookgDt", ...(e.booked ? { value: e.booked } : {}) });
    const credit = e.indicator === "CRDT";
    const txn: StatementTransaction = {
      date,
      ...exactAmount(signed, currency, this.warnings, e.line),
      type: credit ? "credit" : "debit",
      description: (e.unstructured.join(" ") || e.txAdditional || e.additional || "").slice(0, DESCRIPTION_CHARS_MAX),
      reference: e.endToEnd ?? e.creditorRef ?? e.entryRef ?? "",
      raw_line_no: e.line,
    };
    const valueDate = e.value === undefined ? null : fromIsoDateTime(e.value);
    if (valueDate) txn.value_date = valueDate;
    if (e.bankRef) txn.bank_reference = e.bankRef;
    if (e.code.length > 0) txn.bank_code = e.code.join("/");
    // The other party: who paid a credit, who was paid by a debit.
    const counterparty = credit ? e.debtor : e.creditor;
    if (Object.keys(counterparty).length > 0) txn.counterparty = counterparty;
    (this.stmt as StatementDraft).transactions.push(txn);
  }

  private finishStatement(s: StatementDraft): void {
    this.stmt = undefined;
    const currency = s.currency ?? s.balances[0]?.currency ?? s.transactions[0]?.currency;
    if (!currency) throw invalidStatement("statement has no account currency, balance or entry", { line: s.line, field: "Acct/Ccy" });
    const iban = s.iban ?? (s.otherId ? findIban(s.otherId) : undefined);
    const number = s.iban ?? s.otherId;
    if (!number) throw invalidStatement("statement has no account identifier", { line: s.line, field: "Acct/Id" });
    const account: Account = { id: iban ?? number, number, currency };
    if (iban) account.iban = iban;
    if (s.bic) account.bank_id = s.bic;
    if (s.name) account.name = s.name;
    const opening = s.balances.find((b) => b.kind === "OPBD") ?? s.balances.find((b) => b.kind === "PRCD");
    const closing = s.balances.find((b) => b.kind === "CLBD");
    const statement: Statement = {
      account,
      balances: s.balances,
      transactions: s.transactions,
      reconciliation: reconcile(currency, opening, closing, s.transactions),
    };
    if (s.id) statement.statement_id = s.id;
    if (opening) statement.opening_balance = opening;
    if (closing) statement.closing_balance = closing;
    this.statements.push(statement);
  }
}

/** Reads camt.053 (any 001.xx version: the fields used here kept their paths from 001.02 to 001.08 and later). */
export function parseCamt053(input: Buffer | string, warnings: Warnings): Statement[] {
  const text = decodeXml(input, warnings);
  const version = camtVersion(text.slice(0, 4096));
  if (version === null) throw new StatementError("unsupported_format", "the XML document is not a camt.053 statement", { line: 1 });
  const reader = new CamtReader(warnings);
  const parser = new SaxesParser({ xmlns: false, position: true });
  parser.on("opentag", (tag) => reader.open(tag, parser.line));
  parser.on("text", (t) => reader.addText(t, parser.line));
  parser.on("cdata", (t) => reader.addText(t, parser.line));
  parser.on("closetag", () => reader.close());
  try {
    parser.write(text).close();
  } catch (error) {
    if (error instanceof StatementError) throw error;
    throw invalidStatement(`malformed XML: ${(error as Error).message}`, { line: parser.line });
  }
  if (reader.statements.length === 0) throw invalidStatement("no Stmt in the camt.053 document", { line: 1 });
  return reader.statements;
}
