/** The refunds service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

export const RefundsEnv = {
  /** How often the reconciler looks for refunds stuck between the intent and the settle step. */
  REFUNDS_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(5_000),
  /** An intent younger than this is left to the request that is still driving it. */
  REFUNDS_RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(2_000),
  /** Intents re-driven per reconciler pass. */
  REFUNDS_RECONCILE_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(50),
  /** Deadline of one ledger request; past it the outcome is unknown and the reconciler retries. */
  REFUNDS_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
  /** Deadline of asking payments for a live card refund (it calls the processor, with its own timeout and retries). */
  REFUNDS_PAYMENTS_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(30_000),
  /**
   * Days a refund request may wait for a review before it expires (is cancelled by the service). 30 by default: a
   * month covers a platform's weekly review cycle several times over, and card networks let buyers dispute for
   * longer, so an abandoned request does not stay open for ever nor close before a reviewer could see it.
   */
  REFUNDS_REQUEST_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** Between two expiry passes when no sandbox clock moved: how late, at most, a live request expires. 0: only on demand and on clock moves. */
  REFUNDS_EXPIRY_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  /** Requests expired per statement (one transaction each); a pass runs statements until fewer are due. */
  REFUNDS_EXPIRY_BATCH_MAX: z.coerce.number().int().min(1).max(5_000).default(500),
};
