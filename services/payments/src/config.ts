/** The payments service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import type { ServiceConfig } from "@treasury/service-kit";
import { z } from "zod";

export const PaymentsEnv = {
  /** How often the reconciler looks for checkouts and reversals stuck between the ledger post and the settle step. */
  PAYMENTS_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(5_000),
  /** An intent younger than this is left to the request that is still driving it. */
  PAYMENTS_RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(2_000),
  /** Intents re-driven per reconciler pass. */
  PAYMENTS_RECONCILE_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(50),
  /** Deadline of one ledger request; past it the outcome is unknown and the reconciler retries. */
  PAYMENTS_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
  /** Stripe Checkout adapter; without a secret key, provider `stripe` answers provider_not_configured. */
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_API_BASE: z.url().default("https://api.stripe.com"),
  /** Deadline of one call to the processor's API, and how many times its client retries a call that got no answer. */
  STRIPE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  STRIPE_MAX_NETWORK_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /**
   * The signing secret of this deployment's processor webhook endpoint (`whsec_…`); without it the webhook route
   * refuses every event (nothing can be verified).
   */
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** How old a webhook's signed timestamp may be, in seconds (replays of older captures are refused). */
  STRIPE_WEBHOOK_TOLERANCE_S: z.coerce.number().int().min(1).max(3_600).default(300),
  /** How often the processor-event worker looks for due events (a received event also wakes it at once). */
  PAYMENTS_PROCESSOR_POLL_MS: z.coerce.number().int().min(20).max(600_000).default(1_000),
  /** How long a worker owns a claimed event; past it (a crash) another worker takes it again. */
  PAYMENTS_PROCESSOR_LEASE_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** Events claimed per pass. */
  PAYMENTS_PROCESSOR_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(20),
  /**
   * Days a finished processor event is kept to recognise a redelivery (usecases/prune-processor-events.ts); at
   * least the processor's 30 days of redeliveries and resends.
   */
  PAYMENTS_PROCESSOR_EVENT_RETENTION_DAYS: z.coerce.number().int().min(31).max(3_650).default(45),
  /**
   * A live session at the processor that no event has settled is asked about this long after its creation, then
   * this long after its expiry (and as often after that while it stays open): a lost webhook never loses a payment.
   */
  PAYMENTS_PROCESSOR_CHECK_AFTER_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
  /** How often finished processor events past their retention are deleted. */
  PAYMENTS_PROCESSOR_PRUNE_INTERVAL_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(3_600_000),
};

export type PaymentsConfig = ServiceConfig<typeof PaymentsEnv>;
