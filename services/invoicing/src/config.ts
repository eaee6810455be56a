/** The invoicing service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

export const InvoicingEnv = {
  /** Deadline of one ledger request (a post, an aging read). */
  INVOICING_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** How often the reconciler re-drives ledger intents left pending (a crash, a ledger timeout); 0 turns it off. */
  INVOICING_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  /** How old a pending intent must be before the reconciler drives it (the request usually does first). */
  INVOICING_RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(2_000),
  /** How often invoices past their due date are announced (invoice.overdue); a sandbox clock's advance wakes it too. */
  INVOICING_OVERDUE_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  /** Intents or invoices one pass of either job handles. */
  INVOICING_BATCH_MAX: z.coerce.number().int().min(1).max(10_000).default(200),
};
