/**
 * The use cases' ports wired to their adapters: the PostgreSQL stores over a pool (store/stores.ts), the posting
 * engine (posting/), the statement parser (statement-parser/) and the clock. service.ts builds it once; the
 * integration tests build one over their own pool.
 */
import type { Sql } from "./store/db.ts";
import { pgStores } from "./store/stores.ts";
import type { LedgerDeps } from "./usecases/deps.ts";
import type { Clock, PostPort, StatementParser } from "./usecases/ports.ts";

export function ledgerDeps(sql: Sql, parts: { poster: PostPort; parser: StatementParser; now?: Clock }): LedgerDeps {
  return { ...pgStores(sql), poster: parts.poster, parser: parts.parser, now: parts.now ?? (() => new Date()) };
}
