/** The kyc service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

export const KycEnv = {
  /**
   * Keys that seal personal data at rest: `kid1:base64key,kid2:base64key` (32-byte keys). Without them the
   * service starts but refuses submissions (503) and reports not ready, so a missing secret is seen at once.
   */
  PII_KEYS: z.string().min(1).optional(),
  /** The key new data is sealed with; optional when PII_KEYS holds one key. The others only open older rows. */
  PII_ACTIVE_KEY_ID: z.string().min(1).optional(),
  /** Deadline of one ledger request (participant lookups). */
  KYC_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** How often rows sealed with a retired key are sealed again with the active one; 0 turns it off. */
  KYC_RESEAL_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(600_000),
  /** Rows re-sealed per transaction. */
  KYC_RESEAL_BATCH_MAX: z.coerce.number().int().min(1).max(10_000).default(200),
};
