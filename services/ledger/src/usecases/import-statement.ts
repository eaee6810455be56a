/**
 * Reading a bank statement for import-transactions (import-transactions.ts): its bytes or text, checked; the
 * library's errors as the API's; the statement parsed on the parser's workers with its mapping (given, or a saved
 * template's); and the parse_preview answer.
 */
import {
  StatementError,
  type CsvMappingInput,
  type ParseOptions,
  type ParseResult,
  type Statement,
  type StatementTransaction,
} from "@treasury/bank-statements";
import { DomainError, IMPORT_BODY_LIMIT_BYTES, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";

type Body = z.output<typeof schemas.ImportTransactionsBody>;

/** What reading a statement uses: the saved templates and the statement parser. */
export type ImportDeps = Pick<LedgerDeps, "bankLines" | "parser" | "transaction">;

/** The request being answered: the caller gives up at `deadline` (ms since the epoch). */
export interface ImportRequest {
  tenant: Tenant;
  deadline: number;
}

/** Lines parse_preview returns by default (and at most): the counts and totals always cover every line. */
export const PREVIEW_LINES_MAX = 1000;
/** Statements a preview or an import answer describes; a file with more is summarised in the totals. */
export const STATEMENTS_LISTED_MAX = 200;
/**
 * What a preview's statements and lines may take as JSON: answers travel as one NATS message (at most 1 MiB),
 * so long descriptions end the list of lines early rather than making an answer that cannot be sent.
 */
const PREVIEW_JSON_CHARS_MAX = 512 * 1024;
/** The share of control characters above which text is taken for binary data. */
const CONTROL_SHARE_MAX = 0.01;
const BINARY_SAMPLE_CHARS = 64 * 1024;

export const TEMPLATE_HINT = "POST /v1/import-transactions with action get_templates lists the saved templates";

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
    const t = await deps.bankLines.findTemplate(req.tenant, body.template_id);
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
export async function preview(deps: ImportDeps, req: ImportRequest, body: Body) {
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
