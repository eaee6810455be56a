/** What the use cases need: the pool, the ledger, the clock, and the two crash points of the recovery tests. */
import { Coalescer } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { LedgerClient } from "../adapters/ledger.ts";
import type { PaymentsClient } from "../adapters/payments.ts";
import type { Scope, Sql } from "../store/db.ts";
import { insertRefunds, settleCompletedMany, type NewRefund, type RefundRow, type RefundSettlement, type SettledRefund } from "../store/refunds.ts";

/**
 * The two writes every refund makes outside a caller's transaction, each coalesced: the intents (and settles)
 * of the requests that arrive in one event-loop turn go to PostgreSQL as one statement (service-kit
 * coalesce.ts), each request still waiting for its own row.
 */
export interface RefundWrites {
  insertRefund(scope: Scope, refund: NewRefund): Promise<RefundRow | undefined>;
  settleCompleted(s: RefundSettlement): Promise<SettledRefund | undefined>;
}

export function coalescedWrites(sql: Sql): RefundWrites {
  const inserts = new Coalescer((rs: readonly { scope: Scope; refund: NewRefund }[]) => insertRefunds(sql, rs));
  const settles = new Coalescer((ss: readonly RefundSettlement[]) => settleCompletedMany(sql, ss));
  return { insertRefund: (scope, refund) => inserts.submit({ scope, refund }), settleCompleted: (s) => settles.submit(s) };
}

export interface RefundsDeps {
  sql: Sql;
  writes: RefundWrites;
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
