/**
 * The ledger service: participants, wallets, holds, transfers, top-ups, withdrawals, and the posting engine
 * every other service moves money through (`svc.ledger.post`). Operations it has not built yet answer 501
 * not_implemented through the real path (gateway → NATS → this process), never a fake success.
 */
import { createService, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { z } from "zod";
import { registerHandlers } from "./handlers/index.ts";
import { registerImportHandlers } from "./handlers/imports.ts";
import { registerInternalReads } from "./handlers/internal-reads.ts";
import { postBatchSizes } from "./metrics.ts";
import { registerStatementParser, StatementParserEnv } from "./statement-parser/register.ts";
import type { StatementParser } from "./usecases/import-transactions.ts";
import { Poster } from "./usecases/poster.ts";
import { registerVerifyJob, VerifyEnv } from "./verify-job.ts";

/**
 * The ledger's own settings: how many group-commit batches may be in flight at once (ADR 0004), the periodic
 * invariant check, and the worker threads that read bank statements.
 */
const LedgerEnv = { POST_BATCH_SLOTS: z.coerce.number().int().min(1).max(4).default(4), ...VerifyEnv, ...StatementParserEnv };

export interface LedgerDeps extends ServiceDeps {
  /** Pins the balance shard each system-account delta lands on (tests that count shards). */
  pickShard?: () => number;
  /** Reads bank statements; by default a pool of worker threads with a time budget (STATEMENT_PARSE_*). */
  statementParser?: StatementParser;
}

export interface LedgerService extends Service<ServiceConfig<typeof LedgerEnv>> {
  /** The posting engine every money-moving operation goes through. */
  poster: Poster;
}

export async function buildLedger(env: Record<string, string | undefined>, deps: LedgerDeps = {}): Promise<LedgerService> {
  const svc = await createService({ name: "ledger", env, deps, extraEnv: LedgerEnv });
  const poster = new Poster(svc.sql, {
    log: svc.log,
    slots: svc.config.POST_BATCH_SLOTS,
    batchSizes: postBatchSizes(svc.metrics),
    ...(deps.pickShard === undefined ? {} : { pickShard: deps.pickShard }),
  });
  registerHandlers(svc, poster);
  registerImportHandlers(svc, deps.statementParser ?? registerStatementParser(svc));
  registerInternalReads(svc);
  registerVerifyJob(svc);
  return Object.assign(svc, { poster });
}
