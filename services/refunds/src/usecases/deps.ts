/** What the use cases need: the pool, the ledger, the clock, and the two crash points of the recovery tests. */
import type { Logger } from "pino";
import type { LedgerClient } from "../adapters/ledger.ts";
import type { PaymentsClient } from "../adapters/payments.ts";
import type { Scope, Sql } from "../store/db.ts";

export interface RefundsDeps {
  sql: Sql;
  ledger: LedgerClient;
  /** Payments, for the card refund of a live sale at the processor (never asked for a sandbox refund). */
  payments: PaymentsClient;
  log: Logger;
  now: () => Date;
  /** Runs after a refund intent is recorded, before the ledger is asked (a crash point of the recovery tests); a no-op otherwise. */
  afterIntent: () => Promise<void>;
  /** Runs between the ledger post and the settle step (a crash point of the recovery tests); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
}

export const CURRENCY = "USD";
export const PAGE_LIMIT_DEFAULT = 20;

export function scopeOfAuth(auth: { org_id: string; livemode: boolean }): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}
