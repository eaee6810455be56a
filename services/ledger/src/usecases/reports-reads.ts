/**
 * The report reads existing clients call (GET /v1/trial-balance, /v1/balance-sheet, /v1/profit-loss): the
 * query becomes the generate-report body of that type, so both answer the same figures.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { generateReport, type ReportDeps } from "./reports.ts";

type Query = z.output<typeof schemas.ReportQuery>;
export type ReadReportType = "trial_balance" | "balance_sheet" | "profit_loss";

/** Errors: validation_error (from decoding). */
export async function readReport(deps: ReportDeps, tenant: Tenant, type: ReadReportType, q: Query) {
  const asOf = q.as_of_date ?? q.as_of;
  return generateReport(deps, tenant, {
    report_type: type,
    ...(asOf !== undefined ? { as_of: asOf } : {}),
    ...(q.start_date !== undefined ? { start_date: q.start_date } : {}),
    ...(q.end_date !== undefined ? { end_date: q.end_date } : {}),
  });
}
