/** The receipts service's own environment keys (the kit adds BaseEnv); the one place they are read. */
import { z } from "zod";

export const ReceiptsEnv = {
  /**
   * Keys that seal the service's private signing keys at rest: `kid1:base64key,kid2:base64key` (32-byte keys,
   * the kit's key ring). Signing keys are opened only in memory. Without them, proofs already made can be read
   * and verified, but no new proof can be signed (503 service_unavailable).
   */
  RECEIPTS_SEALING_KEYS: z.string().min(1).optional(),
  /** The key new signing keys are sealed with; optional when RECEIPTS_SEALING_KEYS holds one key. */
  RECEIPTS_SEALING_ACTIVE_KEY_ID: z.string().min(1).optional(),
  /** Deadline of one read from the ledger or payments. */
  RECEIPTS_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
};
