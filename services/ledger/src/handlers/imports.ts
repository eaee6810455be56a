/** RPC handlers of bank imports, reconciliation and the report reads: decode with the contracts → use case; the handler picks the status. */
import { schemas, tenantOf } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import type { LedgerDeps } from "../usecases/deps.ts";
import { importTransactions, type ImportOutcome } from "../usecases/import-transactions.ts";
import { autoMatchReconciliation, createReconciliationMatch, deleteReconciliationMatch, listUnmatched } from "../usecases/reconciliation.ts";
import { readReport, type ReadReportType } from "../usecases/reports-reads.ts";
import { decode, param } from "./decode.ts";

function reportRead(deps: LedgerDeps, type: ReadReportType): RpcHandler {
  return async (req, ctx) => ({ body: await readReport(deps, tenantOf(ctx.auth), type, decode(schemas.ReportQuery, req.query, "query")) });
}

/** An import stores bank lines (201); saving a template under a new name creates it (201), an existing name is replaced (200). */
function importAnswer(out: ImportOutcome): { status: number; body: Record<string, unknown> } {
  switch (out.action) {
    case "get_templates":
      return { status: 200, body: { templates: out.templates } };
    case "save_template":
      return { status: out.created ? 201 : 200, body: { template: { ...out.template, created: out.created } } };
    case "parse_preview":
      return { status: 200, body: { preview: out.preview } };
    case "import":
      return { status: 201, body: { import: out.import } };
  }
}

export function registerImportHandlers(svc: Pick<Service, "handle">, deps: LedgerDeps): void {
  const ops: Record<string, RpcHandler> = {
    importTransactions: async (req, ctx) =>
      importAnswer(
        await importTransactions(deps, { tenant: tenantOf(ctx.auth), deadline: ctx.deadline }, decode(schemas.ImportTransactionsBody, req.body, "body")),
      ),
    autoMatchReconciliation: async (req, ctx) => ({
      body: await autoMatchReconciliation(deps, tenantOf(ctx.auth), decode(schemas.AutoMatchBody, req.body, "body")),
    }),
    createReconciliationMatch: async (req, ctx) => ({
      status: 201,
      body: await createReconciliationMatch(deps, tenantOf(ctx.auth), decode(schemas.ManualMatchBody, req.body, "body")),
    }),
    deleteReconciliationMatch: async (req, ctx) => ({ body: await deleteReconciliationMatch(deps, tenantOf(ctx.auth), param(req.params, "match_id")) }),
    listUnmatched: async (req, ctx) => ({ body: await listUnmatched(deps, tenantOf(ctx.auth), decode(schemas.UnmatchedQuery, req.query, "query")) }),
    getTrialBalance: reportRead(deps, "trial_balance"),
    getBalanceSheet: reportRead(deps, "balance_sheet"),
    getProfitLoss: reportRead(deps, "profit_loss"),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
}
