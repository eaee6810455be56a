/**
 * import-transactions: bank statements (CSV, OFX, QFX, camt.053, BAI2, MT940) read by @treasury/bank-statements,
 * previewed or stored as bank lines. Bank lines are the bank's facts, never postings: they are matched to ledger
 * transactions by the reconciliation use cases. Saved CSV mappings (templates) are kept per org and environment.
 * Reading a statement: import-statement.ts; the lines an import stores: import-lines.ts.
 */
import { parseCsvMapping, StatementError, type Statement } from "@treasury/bank-statements";
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { sortableId } from "../domain/ids.ts";
import { planClientLines, planStatements, type Planned } from "./import-lines.ts";
import { preview, readStatement, statementDomainError, STATEMENTS_LISTED_MAX, type ImportDeps, type ImportRequest } from "./import-statement.ts";
import type { TemplateRow } from "./rows.ts";

export type { ImportDeps, ImportRequest } from "./import-statement.ts";

type Body = z.output<typeof schemas.ImportTransactionsBody>;

/** Line numbers listed per outcome (errors, duplicates); the counts are always complete. */
const LINES_LISTED_MAX = 1000;

type TemplateView = ReturnType<typeof presentTemplate>;

/**
 * What an action did: the org's templates; the template saved (`created`: a new name, else its mapping was
 * replaced); a statement read without storing anything; or the bank lines an import stored.
 */
export type ImportOutcome =
  | { action: "get_templates"; templates: TemplateView[] }
  | { action: "save_template"; template: TemplateView; created: boolean }
  | { action: "parse_preview"; preview: Awaited<ReturnType<typeof preview>> }
  | { action: "import"; import: ImportSummary };

/** Errors: validation_error, template_not_found, invalid_mapping (save_template), and those of readStatement (import, parse_preview). */
export async function importTransactions(deps: ImportDeps, req: ImportRequest, body: Body): Promise<ImportOutcome> {
  switch (body.action) {
    case "get_templates":
      return { action: "get_templates", templates: (await deps.bankLines.templates(req.tenant)).map(presentTemplate) };
    case "save_template":
      return { action: "save_template", ...(await saveTemplate(deps, req.tenant, body)) };
    case "parse_preview":
      return { action: "parse_preview", preview: await preview(deps, req, body) };
    case "import":
      return { action: "import", import: await runImport(deps, req, body) };
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
async function saveTemplate(deps: ImportDeps, tenant: Tenant, body: Body): Promise<{ template: TemplateView; created: boolean }> {
  const t = body.template;
  if (t === undefined)
    throw new DomainError("validation_error", "save_template needs template: {name, mapping}", { details: [{ path: "template", message: "is required" }] });
  try {
    parseCsvMapping(t.mapping);
  } catch (e) {
    throw e instanceof StatementError ? statementDomainError(e) : e;
  }
  const row = await deps.bankLines.saveTemplate(tenant, { id: sortableId("tmpl"), name: t.name, mapping: t.mapping, description: t.description ?? null });
  return { template: presentTemplate(row), created: row.created };
}

/**
 * Stores the statement's lines as bank lines, skipping those already stored (same bank account, booking date,
 * amount and bank reference), all in one database transaction. Lines that cannot be stored (an amount finer
 * than the currency's minor unit, a client line that does not validate) are listed in `errors` by line number.
 * Errors: those of readStatement (empty_statement when neither data nor transactions is given).
 */
async function runImport(deps: ImportDeps, req: ImportRequest, body: Body): Promise<ImportSummary> {
  const { tenant } = req;
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
  const inserted = await deps.transaction(async (tx) => {
    await tx.imports.insertImport(tenant, {
      id: importId,
      format,
      accountName: body.account_name ?? null,
      templateId,
      statements: Math.max(summaries.length, 1),
      lines: lineCount,
      errors: planned.errors.length,
    });
    const ids = await tx.imports.insertLines(tenant, importId, planned.lines);
    await tx.imports.settleImport(tenant, importId, ids.size, planned.lines.length - ids.size);
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

type ImportSummary = ReturnType<typeof presentImport>;

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
