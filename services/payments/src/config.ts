/** The payments service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
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
};
