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
  /**
   * Links a verification walks past a chain's newest signed checkpoint before it records a new one: what bounds a
   * verification's reads however long the chain grows.
   */
  RECEIPTS_CHAIN_CHECKPOINT_EVERY: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  /** How often every chain is audited in full, from its first link (usecases/audit-chains.ts). */
  RECEIPTS_CHAIN_AUDIT_INTERVAL_MS: z.coerce.number().int().min(60_000).max(604_800_000).default(21_600_000),
  /** Deadline of one read from the ledger or payments. */
  RECEIPTS_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
};
