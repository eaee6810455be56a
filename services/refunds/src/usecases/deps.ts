/** What the use cases need, as ports only (ports.ts): the store, the ledger, payments, the clock, and the crash points. */
import type { Logger } from "pino";
import type { RefundsLedger, RefundsPayments, RefundsStore } from "./ports.ts";

export interface RefundsDeps {
  store: RefundsStore;
  ledger: RefundsLedger;
  /** Payments, for the card refund of a live sale at the processor (never asked for a sandbox refund). */
  payments: RefundsPayments;
  log: Logger;
  now: () => Date;
  /** Runs after a refund intent is recorded, before the ledger is asked (a crash point of the recovery tests); a no-op otherwise. */
  afterIntent: () => Promise<void>;
  /** Runs between the ledger post and the settle step (a crash point of the recovery tests); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
}

export const PAGE_LIMIT_DEFAULT = 20;
