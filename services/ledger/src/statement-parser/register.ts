/** The ledger's statement-parsing pool (pool.ts): its place in the service's readiness and shutdown (settings: config.ts). */
import type { Service } from "@treasury/service-kit";
import type { LedgerConfig } from "../config.ts";
import { StatementParserPool } from "./pool.ts";

/** Starts the pool with the service's settings; the ledger is ready once a worker has loaded, and ends them on shutdown. */
export function registerStatementParser(svc: Service<Pick<LedgerConfig, "STATEMENT_PARSE_WORKERS" | "STATEMENT_PARSE_BUDGET_MS">>): StatementParserPool {
  const pool = new StatementParserPool({ workers: svc.config.STATEMENT_PARSE_WORKERS, budgetMs: svc.config.STATEMENT_PARSE_BUDGET_MS, log: svc.log });
  svc.readyChecks.push(() => pool.ready());
  svc.onShutdown(() => pool.close());
  return pool;
}
