/** What the use cases need: the pool, the ledger, the providers, the clock and a few limits. */
import type { Logger } from "pino";
import type { LedgerClient, Scope } from "../adapters/ledger.ts";
import type { Providers } from "../adapters/providers.ts";
import type { DropReason } from "../domain/processor-match.ts";
import type { RefundsClient } from "../adapters/refunds.ts";
import type { ProcessorClient } from "../adapters/stripe.ts";
import type { Sql } from "../store/db.ts";

export interface PaymentsDeps {
  sql: Sql;
  ledger: LedgerClient;
  providers: Providers;
  /** The refunds service: the wallet page's refund-request form, and card refunds the processor settled. */
  refunds: RefundsClient;
  /** The card processor's API; undefined without STRIPE_SECRET_KEY (live card work then waits and retries). */
  processor: ProcessorClient | undefined;
  /** Wakes the processor-event worker (a webhook just recorded an event). */
  wakeProcessorWorker: () => void;
  /** Runs before the worker acts on a recorded processor event (a crash point of the recovery test); a no-op otherwise. */
  beforeProcessorWork: () => Promise<void>;
  log: Logger;
  now: () => Date;
  /** Runs between the ledger post and the settle step (the crash point of the recovery test); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
  /**
   * How long after a live processor session is created, and after it expires, the processor is asked about it
   * when its events have not settled it (usecases/check-processor-sessions.ts).
   */
  processorCheckAfterMs: number;
  /** Counts a processor report dropped for not matching its session (`processor_events_dropped_total`); optional. */
  processorEventDropped?: (reason: DropReason) => void;
  /** Time spent in each step of a completion (the `checkout_completion_step_seconds` histogram); optional. */
  observeStep?: (step: CompletionStep, seconds: number) => void;
}

/** The steps of docs/architecture.md, "Money across services" as payments runs them for a checkout. */
export type CompletionStep = "intent" | "ledger_post" | "settle";

export const CHECKOUT_TTL_MS = 60 * 60 * 1000;
export const CURRENCY = "USD";

export function scopeOfAuth(auth: { org_id: string; livemode: boolean }): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}
