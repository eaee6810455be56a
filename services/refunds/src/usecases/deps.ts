/** What the use cases need, as ports only (ports.ts): the store, the ledger, payments, the clocks, and the crash points. */
import type { RiskGate } from "@treasury/service-kit";
import type { Tenant } from "@treasury/contracts";
import type { Logger } from "pino";
import type { RefundsLedger, RefundsPayments, RefundsStore } from "./ports.ts";

export interface RefundsDeps {
  store: RefundsStore;
  ledger: RefundsLedger;
  /** Asked before a refund's intent is recorded (refuses a denial, and an outage when the org fails closed). */
  risk: RiskGate;
  /** Payments, for the card refund of a live sale at the processor (never asked for a sandbox refund). */
  payments: RefundsPayments;
  log: Logger;
  /** Real time: what the service's own records are stamped with. */
  now: () => Date;
  /** The time an org and environment runs on (live: real time; sandbox: the org's test clock): what expiry reads. */
  clock: (tenant: Tenant) => Date;
  /** Days a refund request may wait for a review before it expires (REFUNDS_REQUEST_TTL_DAYS). */
  requestTtlDays: number;
  /** Runs after a refund intent is recorded, before the ledger is asked (a crash point of the recovery tests); a no-op otherwise. */
  afterIntent: () => Promise<void>;
  /** Runs between the ledger post and the settle step (a crash point of the recovery tests); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
}

export const PAGE_LIMIT_DEFAULT = 20;
