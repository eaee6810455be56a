/** The ledger's own environment keys (the kit's BaseEnv comes first). process.env is read only through these. */
import { z } from "zod";

export const LedgerEnv = {
  /** Group-commit batches in flight at once (ADR 0004); each owns its share of every system account's balance shards. */
  POST_BATCH_SLOTS: z.coerce.number().int().min(1).max(4).default(4),
  /** How often the invariants are checked (jobs/verify.ts); 0 turns the check off. */
  LEDGER_VERIFY_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  /** Longest a check may take; past it the check is abandoned (its session ended) and counted as failed. */
  LEDGER_VERIFY_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(120_000),
  /** Worker threads reading bank statements, each one statement at a time, off the event loop. */
  STATEMENT_PARSE_WORKERS: z.coerce.number().int().min(1).max(8).default(1),
  /** Longest one statement may take to read; past it the request answers 422 statement_too_complex. */
  STATEMENT_PARSE_BUDGET_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
};

export type LedgerConfig = { [K in keyof typeof LedgerEnv]: z.output<(typeof LedgerEnv)[K]> };
