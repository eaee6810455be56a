/** RPC handlers of bank imports, reconciliation and the report reads: decode with the contracts → use case. */
import { schemas } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import { importTransactions, type StatementParser } from "../usecases/import-transactions.ts";
import { autoMatchReconciliation, createReconciliationMatch, deleteReconciliationMatch, listUnmatched } from "../usecases/reconciliation.ts";
import { readReport, type ReadReportType } from "../usecases/reports-reads.ts";
import { decode, param, scopeOf } from "./decode.ts";

function reportRead(sql: Service["sql"], type: ReadReportType): RpcHandler {
  return async (req, ctx) => ({ body: await readReport(sql, scopeOf(ctx.auth), type, decode(schemas.ReportQuery, req.query, "query")) });
}

export function registerImportHandlers(svc: Pick<Service, "sql" | "handle">, parser: StatementParser): void {
  const sql = svc.sql;
  const ops: Record<string, RpcHandler> = {
    importTransactions: async (req, ctx) =>
      importTransactions({ sql, parser }, { scope: scopeOf(ctx.auth), deadline: ctx.deadline }, decode(schemas.ImportTransactionsBody, req.body, "body")),
    autoMatchReconciliation: async (req, ctx) => ({
      body: await autoMatchReconciliation(sql, scopeOf(ctx.auth), decode(schemas.AutoMatchBody, req.body, "body")),
    }),
    createReconciliationMatch: async (req, ctx) => ({
      status: 201,
      body: await createReconciliationMatch(sql, scopeOf(ctx.auth), decode(schemas.ManualMatchBody, req.body, "body")),
    }),
    deleteReconciliationMatch: async (req, ctx) => ({ body: await deleteReconciliationMatch(sql, scopeOf(ctx.auth), param(req.params, "match_id")) }),
    listUnmatched: async (req, ctx) => ({ body: await listUnmatched(sql, scopeOf(ctx.auth), decode(schemas.UnmatchedQuery, req.query, "query")) }),
    getTrialBalance: reportRead(sql, "trial_balance"),
    getBalanceSheet: reportRead(sql, "balance_sheet"),
    getProfitLoss: reportRead(sql, "profit_loss"),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
}
