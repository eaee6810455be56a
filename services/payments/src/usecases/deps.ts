/** What the use cases need: the pool, the ledger, the providers, the clock and a few limits. */
import type { Logger } from "pino";
import type { LedgerClient, Scope } from "../adapters/ledger.ts";
import type { Providers } from "../adapters/providers.ts";
import type { Sql } from "../store/db.ts";

export interface PaymentsDeps {
  sql: Sql;
  ledger: LedgerClient;
  providers: Providers;
  log: Logger;
  now: () => Date;
  /** Runs between the ledger post and the settle step (the crash point of the recovery test); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
}

export const CHECKOUT_TTL_MS = 60 * 60 * 1000;
export const CURRENCY = "USD";

export function scopeOfAuth(auth: { org_id: string; livemode: boolean }): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}
