/** The ledger's statement-parsing pool (pool.ts): its settings, and its place in the service's readiness and shutdown. */
import type { Service } from "@treasury/service-kit";
import { z } from "zod";
import { StatementParserPool } from "./pool.ts";

export const StatementParserEnv = {
  /** Worker threads reading bank statements, each one statement at a time, off the event loop. */
  STATEMENT_PARSE_WORKERS: z.coerce.number().int().min(1).max(8).default(1),
  /** Longest one statement may take to read; past it the request answers 422 statement_too_complex. */
  STATEMENT_PARSE_BUDGET_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
};

/** Starts the pool with the service's settings; the ledger is ready once a worker has loaded, and ends them on shutdown. */
export function registerStatementParser(svc: Service<{ STATEMENT_PARSE_WORKERS: number; STATEMENT_PARSE_BUDGET_MS: number }>): StatementParserPool {
  const pool = new StatementParserPool({ workers: svc.config.STATEMENT_PARSE_WORKERS, budgetMs: svc.config.STATEMENT_PARSE_BUDGET_MS, log: svc.log });
  svc.readyChecks.push(() => pool.ready());
  svc.onShutdown(() => pool.close());
  return pool;
}
