/**
 * import-transactions: bank statements (CSV, OFX, QFX, camt.053, BAI2, MT940) read by @treasury/bank-statements,
 * previewed or stored as bank lines. Bank lines are the bank's facts, never postings: they are matched to ledger
 * transactions by the reconciliation use cases. Saved CSV mappings (templates) are kept per org and environment.
 */
import { createHash } from "node:crypto";
import {
  parseCsvMapping,
  StatementError,
  type CsvMappingInput,
  type ParseOptions,
  type ParseResult,
  type Statement,
  type StatementTransaction,
} from "@treasury/bank-statements";
import { DomainError, IMPORT_BODY_LIMIT_BYTES, type schemas } from "@treasury/contracts";
import { withTx } from "@treasury/service-kit";
import { z } from "zod";
import { sortableId } from "../domain/ids.ts";
import type { Scope } from "../store/accounts.ts";
import {
  findTemplate,
  insertBankLines,
  insertImport,
  listTemplates,
  settleImport,
  upsertTemplate,
  type NewBankLine,
  type TemplateRow,
} from "../store/bank-lines.ts";
import type { Sql } from "../store/db.ts";

type Body = z.output<typeof schemas.ImportTransactionsBody>;

/**
 * Reads a statement off the ledger's event loop (statement-parser/pool.ts: worker threads with a time budget).
 * Rejects with the library's StatementError, or a DomainError: statement_too_complex past the budget,
 * service_unavailable when every reader is busy or the caller's deadline passed while it waited.
 */
export interface StatementParser {
  parse(input: Buffer | string, opts: ParseOptions, deadline: number): Promise<ParseResult>;
}

/** What the import operations use: the ledger's database and the statement parser. */
export interface ImportDeps {
  sql: Sql;
  parser: StatementParser;
}

/** The request being answered: the caller gives up at `deadline` (ms since the epoch). */
export interface ImportRequest {
  scope: Scope;
  deadline: number;
}

/** Lines parse_preview returns by default (and at most): the counts and totals always cover every line. */
export const PREVIEW_LINES_MAX = 1000;
/** Statements a preview or an import answer describes; a file with more is summarised in the totals. */
const STATEMENTS_LISTED_MAX = 200;
/**
 * What a preview's statements and lines may take as JSON: answers travel as one NATS message (at most 1 MiB),
 * so long descriptions end the list of lines early rather than making an answer that cannot be sent.
 */
const PREVIEW_JSON_CHARS_MAX = 512 * 1024;
/** Line numbers listed per outcome (errors, duplicates); the counts are always complete. */
const LINES_LISTED_MAX = 1000;
/** The share of control characters above which text is taken for binary data. */
const CONTROL_SHARE_MAX = 0.01;
const BINARY_SAMPLE_CHARS = 64 * 1024;
/** The bank account of lines whose statement names none and whose import gives no account_name. */
const UNNAMED_ACCOUNT = "unspecified";

const TEMPLATE_HINT = "POST /v1/import-transactions with action get_templates lists the saved templates";

/** Errors: validation_error, template_not_found, invalid_mapping (save_template), and those of readStatement (import, parse_preview). */
export async function importTransactions(deps: ImportDeps, req: ImportRequest, body: Body): Promise<{ status: number; body: Record<string, unknown> }> {
  switch (body.action) {
    case "get_templates":
      return { status: 200, body: { templates: (await listTemplates(deps.sql, req.scope)).map(presentTemplate) } };
    case "save_template":
      return saveTemplate(deps.sql, req.scope, body);
    case "parse_preview":
      return { status: 200, body: { preview: await preview(deps, req, body) } };
    case "import":
      return { status: 201, body: { import: await runImport(deps, req, body) } };
  }
}

function presentTemplate(t: TemplateRow) {
  return {
    id: t.id,
    name: t.name,
    format: t.format,
    mapping: t.mapping,
    description: t.description,
    created_at: t.created_at.toISOString(),
    updated_at: t.updated_at.toISOString(),
  };
}

/** Saves a CSV mapping under a name (replacing the mapping of a template with that name). Errors: validation_error, invalid_mapping. */
async function saveTemplate(sql: Sql, scope: Scope, body: Body): Promise<{ status: number; body: Record<string, unknown> }> {
  const t = body.template;
  if (t === undefined)
    throw new DomainError("validation_error", "save_template needs template: {name, mapping}", { details: [{ path: "template", message: "is required" }] });
  try {
    parseCsvMapping(t.mapping);
  } catch (e) {
    throw e instanceof StatementError ? statementDomainError(e) : e;
  }
  const row = await upsertTemplate(sql, scope, { id: sortableId("tmpl"), name: t.name, mapping: t.mapping, description: t.description ?? null });
  return { status: row.created ? 201 : 200, body: { template: { ...presentTemplate(row), created: row.created } } };
}

// ---- Reading a statement ----

/**
 * The statement's bytes or text: `data` as sent, or decoded from base64. Errors: empty_statement,
 * invalid_base64, binary_statement.
 */
export function statementInput(body: Pick<Body, "data" | "data_encoding">, utf16: boolean): Buffer | string {
  const data = body.data ?? "";
  // A test for any non-space character stops at the first one (trim() would copy a 1 MiB string).
  if (!/\S/.test(data))
    throw new DomainError("empty_statement", "data is empty: send the statement's text (or its bytes in base64 with data_encoding base64)", {
      details: [{ path: "data", message: "is empty" }],
    });
  let input: Buffer | string = data;
  if (body.data_encoding === "base64") {
    const compact = data.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
      throw new DomainError("invalid_base64", "data is not valid base64", { details: [{ path: "data", message: "is not base64 (data_encoding is base64)" }] });
    }
    input = Buffer.from(compact, "base64");
    if (!/\S/.test(input.toString("latin1")))
      throw new DomainError("empty_statement", "data decodes to nothing", { details: [{ path: "data", message: "is empty" }] });
  }
  if (!utf16 && looksBinary(input)) {
    throw new DomainError("binary_statement", "data is binary, not a statement's text", {
      details: [{ path: "data", message: "contains NUL or many control characters; statements are text (base64 with data_encoding keeps a file's bytes)" }],
    });
  }
  return input;
}

/**
 * Binary data (an image, an archive, random bytes) rather than a statement: a NUL, or more than 1 % control
 * characters other than tab, line breaks, and the SWIFT envelope's SOH/ETX. UTF-16 text (with its byte-order
 * mark) is not binary.
 */
function looksBinary(input: Buffer | string): boolean {
  if (Buffer.isBuffer(input) && ((input[0] === 0xff && input[1] === 0xfe) || (input[0] === 0xfe && input[1] === 0xff))) return false;
  const n = Math.min(input.length, BINARY_SAMPLE_CHARS);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const c = typeof input === "string" ? input.charCodeAt(i) : (input[i] ?? 0);
    if (c === 0) return true;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c && c !== 0x01 && c !== 0x03) || c === 0x7f) control++;
  }
  return control > n * CONTROL_SHARE_MAX;
}

/** A library error as the API's error: the code, and where in the input (line, field) in details. */
export function statementDomainError(e: StatementError): DomainError {
  const where = e.details.line !== undefined ? `line ${e.details.line}: ` : "";
  const at = (path: string) => [
    {
      path,
      message: `${where}${e.message}${e.details.value !== undefined && !e.message.includes(e.details.value) ? ` (found "${e.details.value.slice(0, 100)}")` : ""}`,
    },
  ];
  switch (e.code) {
    case "invalid_statement":
      return new DomainError("unparseable_statement", `The statement cannot be read: ${where}${e.message}`, { details: at("data") });
    case "unsupported_format":
      return new DomainError("unsupported_format", e.message, {
        details: at(e.details.field ?? "data"),
        hint: "format is one of csv, ofx, qfx, camt053, bai2, mt940, auto",
      });
    case "unsupported_encoding":
      return new DomainError("unsupported_encoding", e.message, { details: at("mapping.encoding") });
    case "mapping_required":
      return new DomainError("mapping_required", e.message, {
        details: at("mapping"),
        hint: `Give mapping (date, amount or debit/credit, currency) or template_id; ${TEMPLATE_HINT}`,
      });
    case "invalid_mapping":
      // A column reference the file does not have carries the name it looked for; other problems are the mapping's shape.
      return e.details.value !== undefined
        ? new DomainError("mapping_column_not_found", e.message, { details: at(`mapping.${e.details.field ?? ""}`) })
        : new DomainError("invalid_mapping", e.message, { details: at(`mapping${e.details.path ? `.${e.details.path}` : ""}`) });
    case "statement_too_large":
      return new DomainError("statement_too_large", e.message, { details: at("data") });
  }
}

/**
 * Parses the request's statement with its mapping (given, or the saved template's), on the parser's workers.
 * Pure apart from reading the template. Errors: template_not_found, empty_statement, invalid_base64,
 * binary_statement, unparseable_statement, unsupported_format, unsupported_encoding, mapping_required,
 * invalid_mapping, mapping_column_not_found, statement_too_large, statement_too_complex (over the parse budget),
 * service_unavailable (every reader busy).
 */
export async function readStatement(deps: ImportDeps, req: ImportRequest, body: Body): Promise<{ result: ParseResult; templateId: string | null }> {
  let mapping: unknown = body.mapping;
  let templateId: string | null = null;
  if (body.template_id !== undefined) {
    const t = await findTemplate(deps.sql, req.scope, body.template_id);
    if (t === undefined) throw new DomainError("template_not_found", `Import template ${body.template_id} not found`, { hint: TEMPLATE_HINT });
    mapping ??= t.mapping;
    templateId = t.id;
  }
  const utf16 = typeof mapping === "object" && mapping !== null && (mapping as Record<string, unknown>)["encoding"] === "utf-16le";
  const input = statementInput(body, utf16);
  try {
    const opts: ParseOptions = {
      format: body.format ?? "auto",
      ...(mapping !== undefined ? { mapping: mapping as CsvMappingInput } : {}),
      bytesMax: IMPORT_BODY_LIMIT_BYTES,
    };
    return { result: await deps.parser.parse(input, opts, req.deadline), templateId };
  } catch (e) {
    throw e instanceof StatementError ? statementDomainError(e) : e;
  }
}

// ---- parse_preview ----

function presentLine(t: StatementTransaction) {
  return {
    line_no: t.raw_line_no,
    date: t.date,
    value_date: t.value_date ?? null,
    type: t.type,
    amount: t.amount,
    amount_decimal: t.amount_decimal,
    currency: t.currency,
    description: t.description,
    reference: t.reference,
    bank_reference: t.bank_reference ?? null,
    counterparty: t.counterparty ?? null,
    bank_code: t.bank_code ?? null,
  };
}

/** Credits, debits and net of a statement's representable amounts (minor units). */
function totalsOf(st: Statement) {
  let credits = 0;
  let debits = 0;
  let unrepresentable = 0;
  for (const t of st.transactions) {
    if (t.amount === null) unrepresentable++;
    else if (t.amount >= 0) credits += t.amount;
    else debits -= t.amount;
  }
  return { credits, debits, net: credits - debits, lines_without_minor_amount: unrepresentable };
}

function presentStatement(st: Statement, lines: StatementTransaction[]) {
  return {
    account: st.account,
    statement_id: st.statement_id ?? null,
    opening_balance: st.opening_balance ?? null,
    closing_balance: st.closing_balance ?? null,
    balances: st.balances,
    reconciliation: st.reconciliation,
    line_count: st.transactions.length,
    totals: totalsOf(st),
    lines: lines.map(presentLine),
    lines_truncated: lines.length < st.transactions.length,
  };
}

/**
 * The parsed statements without writing anything: at most preview_limit lines in all, in file order, and no
 * more than PREVIEW_JSON_CHARS_MAX of JSON; the counts and totals always cover the whole file.
 */
async function preview(deps: ImportDeps, req: ImportRequest, body: Body) {
  const { result } = await readStatement(deps, req, body);
  let lineBudget = body.preview_limit ?? PREVIEW_LINES_MAX;
  let chars = 0;
  const statements: ReturnType<typeof presentStatement>[] = [];
  for (const st of result.statements.slice(0, STATEMENTS_LISTED_MAX)) {
    const shown = presentStatement(st, []);
    chars += JSON.stringify(shown).length;
    if (chars > PREVIEW_JSON_CHARS_MAX) break;
    for (const t of st.transactions) {
      if (lineBudget <= 0) break;
      const line = presentLine(t);
      chars += JSON.stringify(line).length + 1;
      if (chars > PREVIEW_JSON_CHARS_MAX) {
        lineBudget = 0;
        break;
      }
      shown.lines.push(line);
      lineBudget--;
    }
    shown.lines_truncated = shown.lines.length < st.transactions.length;
    statements.push(shown);
  }
  return {
    format: result.format,
    statement_count: result.statements.length,
    line_count: result.statements.reduce((n, s) => n + s.transactions.length, 0),
    statements,
    statements_truncated: result.statements.length > statements.length,
    warnings: result.warnings,
  };
}

// ---- import ----

interface LineError {
  line: number;
  code: string;
  message: string;
}

interface Planned {
  lines: NewBankLine[];
  /** The statement index of each planned line. */
  statementOf: number[];
  errors: LineError[];
}

/**
 * The de-duplication reference of a line: the bank's own identifier when it gives one, else a digest of the
 * line's text with its occurrence among equal lines of the statement (two equal payments on one day are two
 * lines; the same file imported again gives the same references).
 */
function dedupeRef(t: { reference: string; bank_reference?: string | undefined; description: string }, key: string, seen: Map<string, number>): string {
  const own = t.reference !== "" ? t.reference : (t.bank_reference ?? "");
  if (own !== "") return own;
  const digest = createHash("sha256").update(t.description).digest("hex").slice(0, 16);
  const k = `${key}\u0000${digest}`;
  const n = (seen.get(k) ?? 0) + 1;
  seen.set(k, n);
  return `~${digest}#${n}`;
}

function planStatements(statements: readonly Statement[], accountName: string | undefined): Planned {
  const planned: Planned = { lines: [], statementOf: [], errors: [] };
  for (const [i, st] of statements.entries()) {
    const account = st.account.id !== "" ? st.account.id : (accountName ?? UNNAMED_ACCOUNT);
    const seen = new Map<string, number>();
    for (const t of st.transactions) {
      if (t.amount === null) {
        planned.errors.push({
          line: t.raw_line_no,
          code: "amount_not_representable",
          message: `amount ${t.amount_decimal} ${t.currency} has more decimals than the currency's minor unit`,
        });
        continue;
      }
      planned.lines.push({
        id: sortableId("bl"),
        bankAccount: account,
        currency: t.currency,
        bookingDate: t.date,
        valueDate: t.value_date ?? null,
        amount: t.amount,
        amountDecimal: t.amount_decimal,
        description: t.description,
        reference: t.reference,
        bankReference: t.bank_reference ?? null,
        counterparty: t.counterparty === undefined ? null : { ...t.counterparty },
        bankCode: t.bank_code ?? null,
        lineNo: t.raw_line_no,
        dedupeRef: dedupeRef(t, `${account}\u0000${t.date}\u0000${t.amount}`, seen),
      });
      planned.statementOf.push(i);
    }
  }
  return planned;
}

/** A line the client read itself (the `transactions` array): 1-based position as its line number. */
const ClientLine = z.object({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
    .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)), { message: "must be a date" }),
  value_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
    .optional(),
  amount: z
    .number({ error: "must be an integer number of minor units" })
    .int({ error: "must be an integer number of minor units" })
    .refine(Number.isSafeInteger, { message: "is too large" }),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, { message: "must be a 3-letter ISO 4217 code" })
    .default("USD"),
  description: z.string().max(1000).default(""),
  reference: z.string().max(255).default(""),
  bank_account: z.string().min(1).max(100).optional(),
});

function planClientLines(items: readonly Record<string, unknown>[], accountName: string | undefined): Planned {
  const planned: Planned = { lines: [], statementOf: [], errors: [] };
  const seen = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const line = i + 1;
    const parsed = ClientLine.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      planned.errors.push({ line, code: "invalid_line", message: `${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}` });
      continue;
    }
    const t = parsed.data;
    const account = t.bank_account ?? accountName ?? UNNAMED_ACCOUNT;
    planned.lines.push({
      id: sortableId("bl"),
      bankAccount: account,
      currency: t.currency,
      bookingDate: t.date,
      valueDate: t.value_date ?? null,
      amount: t.amount,
      amountDecimal: decimalOf(t.amount),
      description: t.description,
      reference: t.reference,
      bankReference: null,
      counterparty: null,
      bankCode: null,
      lineNo: line,
      dedupeRef: dedupeRef(t, `${account}\u0000${t.date}\u0000${t.amount}`, seen),
    });
    planned.statementOf.push(0);
  }
  return planned;
}

/** Minor units written as a two-decimal string (client lines carry no currency precision of their own). */
function decimalOf(minor: number): string {
  const abs = Math.abs(minor);
  return `${minor < 0 ? "-" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/**
 * Stores the statement's lines as bank lines, skipping those already stored (same bank account, booking date,
 * amount and bank reference), all in one database transaction. Lines that cannot be stored (an amount finer
 * than the currency's minor unit, a client line that does not validate) are listed in `errors` by line number.
 * Errors: those of readStatement (empty_statement when neither data nor transactions is given).
 */
async function runImport(deps: ImportDeps, req: ImportRequest, body: Body) {
  const { sql } = deps;
  const { scope } = req;
  let format: string;
  let summaries: StatementSummary[] = [];
  let templateId: string | null = null;
  let planned: Planned;
  let warnings: unknown[] = [];
  if (body.data === undefined && body.transactions !== undefined) {
    format = "transactions";
    planned = planClientLines(body.transactions, body.account_name);
  } else {
    // The parse result is dropped once planned: its transaction objects can be freed while the lines are written.
    const read = await readStatement(deps, req, body);
    format = read.result.format;
    summaries = read.result.statements.map(summaryOf);
    templateId = read.templateId;
    warnings = read.result.warnings;
    planned = planStatements(read.result.statements, body.account_name);
  }
  const importId = sortableId("bimp");
  const lineCount = planned.lines.length + planned.errors.length;
  const inserted = await withTx(sql, async (tx) => {
    await insertImport(tx, scope, {
      id: importId,
      format,
      accountName: body.account_name ?? null,
      templateId,
      statements: Math.max(summaries.length, 1),
      lines: lineCount,
      errors: planned.errors.length,
    });
    const ids = await insertBankLines(tx, scope, importId, planned.lines);
    await settleImport(tx, scope, importId, ids.size, planned.lines.length - ids.size);
    return ids;
  });
  return presentImport(importId, format, summaries, planned, inserted, warnings);
}

/** What an import's answer says of each statement. */
interface StatementSummary {
  account: Statement["account"];
  statement_id: string | null;
  line_count: number;
  reconciliation: Statement["reconciliation"];
}

function summaryOf(st: Statement): StatementSummary {
  return { account: st.account, statement_id: st.statement_id ?? null, line_count: st.transactions.length, reconciliation: st.reconciliation };
}

function presentImport(
  importId: string,
  format: string,
  statements: readonly StatementSummary[],
  planned: Planned,
  inserted: ReadonlySet<string>,
  warnings: unknown[],
) {
  const perStatement = statements.map(() => ({ imported: 0, duplicates: 0 }));
  const duplicateLines: number[] = [];
  for (const [i, l] of planned.lines.entries()) {
    const counts = perStatement[planned.statementOf[i] ?? 0];
    if (inserted.has(l.id)) {
      if (counts) counts.imported++;
    } else {
      if (counts) counts.duplicates++;
      if (duplicateLines.length < LINES_LISTED_MAX) duplicateLines.push(l.lineNo);
    }
  }
  return {
    id: importId,
    format,
    lines: planned.lines.length + planned.errors.length,
    imported: inserted.size,
    duplicates: planned.lines.length - inserted.size,
    error_count: planned.errors.length,
    errors: planned.errors.slice(0, LINES_LISTED_MAX),
    duplicate_lines: duplicateLines,
    statements: statements
      .slice(0, STATEMENTS_LISTED_MAX)
      .map((st, i) => ({ ...st, imported: perStatement[i]?.imported ?? 0, duplicates: perStatement[i]?.duplicates ?? 0 })),
    warnings,
  };
}
