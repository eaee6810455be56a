/** What the use cases need, made of ports only (usecases/ports.ts): records, the ledger, the providers, the clock, a few limits. */
import type { RiskGate } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { DropReason } from "../domain/processor-match.ts";
import type {
  CheckoutStore,
  DisputeStore,
  LedgerClient,
  ProcessorCheckStore,
  ProcessorClient,
  ProcessorEventStore,
  ProcessorRefundStore,
  Providers,
  RefundsClient,
  SpendStore,
  TopupStore,
  WalletSessionStore,
} from "./ports.ts";

/** The service's own records. */
export interface PaymentsStores {
  checkouts: CheckoutStore;
  disputes: DisputeStore;
  topups: TopupStore;
  walletSessions: WalletSessionStore;
  spends: SpendStore;
  processorEvents: ProcessorEventStore;
  processorRefunds: ProcessorRefundStore;
  processorChecks: ProcessorCheckStore;
}

export interface PaymentsDeps extends PaymentsStores {
  ledger: LedgerClient;
  /** Asked before a checkout or a shared spend moves money (refuses a denial, and an outage when the org fails closed). */
  risk: RiskGate;
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
