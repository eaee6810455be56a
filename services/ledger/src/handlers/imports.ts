/** RPC handlers of bank imports, reconciliation and the report reads: decode with the contracts → use case. */
import { schemas, tenantOf } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import type { LedgerDeps } from "../usecases/deps.ts";
import { importTransactions } from "../usecases/import-transactions.ts";
import { autoMatchReconciliation, createReconciliationMatch, deleteReconciliationMatch, listUnmatched } from "../usecases/reconciliation.ts";
import { readReport, type ReadReportType } from "../usecases/reports-reads.ts";
import { decode, param } from "./decode.ts";

function reportRead(deps: LedgerDeps, type: ReadReportType): RpcHandler {
  return async (req, ctx) => ({ body: await readReport(deps, tenantOf(ctx.auth), type, decode(schemas.ReportQuery, req.query, "query")) });
}

export function registerImportHandlers(svc: Pick<Service, "handle">, deps: LedgerDeps): void {
  const ops: Record<string, RpcHandler> = {
    importTransactions: async (req, ctx) =>
      importTransactions(deps, { tenant: tenantOf(ctx.auth), deadline: ctx.deadline }, decode(schemas.ImportTransactionsBody, req.body, "body")),
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
