/**
 * The use cases' ports wired to their adapters: the PostgreSQL stores over a pool (store/stores.ts), the posting
 * engine (posting/), the statement parser (statement-parser/) and the clock. service.ts builds it once; the
 * integration tests build one over their own pool.
 */
import type { RiskGate } from "@treasury/service-kit";
import type { Sql } from "./store/db.ts";
import { pgStores } from "./store/stores.ts";
import type { LedgerDeps } from "./usecases/deps.ts";
import type { Clock, PostPort, StatementParser } from "./usecases/ports.ts";

interface Parts {
  poster: PostPort;
  parser: StatementParser;
  risk: RiskGate;
  now?: Clock;
  /** The service's copy of the clocks: told of an advance at once, so this replica answers with it (read your writes). */
  clockCopy?: { sync(orgId: string, advancedSeconds: number): void };
}

export function ledgerDeps(sql: Sql, parts: Parts): LedgerDeps {
  const stores = pgStores(sql);
  const copy = parts.clockCopy;
  const sandboxClocks: LedgerDeps["sandboxClocks"] =
    copy === undefined
      ? stores.sandboxClocks
      : {
          ...stores.sandboxClocks,
          advance: async (orgId, next, data) => {
            const seconds = await stores.sandboxClocks.advance(orgId, next, data);
            copy.sync(orgId, seconds);
            return seconds;
          },
        };
  return { ...stores, sandboxClocks, poster: parts.poster, parser: parts.parser, risk: parts.risk, now: parts.now ?? (() => new Date()) };
}
