/** The payouts service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { schemas } from "@treasury/contracts";
import { z } from "zod";

const digits = (n: number) => z.string().regex(new RegExp(`^[0-9]{${n}}$`), { message: `must be ${n} digits` });

export const PayoutsEnv = {
  /**
   * Keys that seal bank account numbers at rest: `kid1:base64key,kid2:base64key` (32-byte keys), the same ring
   * format as the kyc service's. Without them the service starts and pays out in sandbox, but refuses bank
   * accounts and live payouts (503 service_unavailable).
   */
  PII_KEYS: z.string().min(1).optional(),
  PII_ACTIVE_KEY_ID: z.string().min(1).optional(),
  /**
   * How often values sealed with a retired key (in PII_KEYS but not active) are sealed again with the active one:
   * bank accounts, live payouts' destinations and ACH files. 0 turns it off; it never runs with one key.
   */
  PAYOUTS_RESEAL_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(600_000),
  /** Values of each kind re-sealed per transaction. */
  PAYOUTS_RESEAL_BATCH_MAX: z.coerce.number().int().min(1).max(10_000).default(200),
  /** Deadline of one ledger request; past it the outcome is unknown and the reconciler retries. */
  PAYOUTS_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
  /** Deadline of one kyc request (eligibility). */
  PAYOUTS_KYC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** How often the reconciler looks for payouts stuck between the ledger post and the next step. */
  PAYOUTS_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(5_000),
  /**
   * An intent younger than this is left to the request still driving it. Longer than the ledger deadline, so
   * the reconciler does not drive an intent whose request is still waiting for the ledger.
   */
  PAYOUTS_RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
  PAYOUTS_RECONCILE_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(50),

  /** The ACH drop directory a bank's SFTP pick-up reads; without it (and the origin below) live payouts are refused. */
  PAYOUTS_ACH_DIR: z.string().min(1).optional(),
  /** How often pending live payouts are gathered into a file; 0 cuts only on `admin payouts cut-file`. */
  PAYOUTS_ACH_CUT_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(3_600_000),
  /** Days after a file's cut when its payouts count as settled (`admin payouts settle`). */
  PAYOUTS_ACH_SETTLEMENT_DAYS: z.coerce.number().int().min(0).max(30).default(2),
  /** Entries per file; the rest wait for the next cut. */
  PAYOUTS_ACH_FILE_ENTRIES_MAX: z.coerce.number().int().min(1).max(100_000).default(5_000),
  PAYOUTS_ACH_IMMEDIATE_DESTINATION: digits(9).optional(),
  PAYOUTS_ACH_IMMEDIATE_DESTINATION_NAME: z.string().max(23).default(""),
  PAYOUTS_ACH_IMMEDIATE_ORIGIN: z.string().length(10).optional(),
  PAYOUTS_ACH_IMMEDIATE_ORIGIN_NAME: z.string().max(23).default(""),
  PAYOUTS_ACH_COMPANY_NAME: z.string().min(1).max(16).optional(),
  PAYOUTS_ACH_COMPANY_ID: z.string().length(10).optional(),
  PAYOUTS_ACH_ODFI_ROUTING: digits(9).optional(),
  PAYOUTS_ACH_ENTRY_DESCRIPTION: z.string().min(1).max(10).default("PAYOUT"),

  /** How often the leader looks for due payout schedules (a sandbox clock advance also wakes it); 0 only on demand. */
  PAYOUTS_SCHEDULE_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  /**
   * Schedules claimed and run per batch of a pass: at most what one ledger read of balances may name. Each batch
   * costs a fixed number of statements and reads, so larger batches pay more payouts for them.
   */
  PAYOUTS_SCHEDULE_BATCH_MAX: z.coerce.number().int().min(1).max(schemas.PARTICIPANT_BALANCES_MAX).default(200),
  /**
   * How long a run keeps a schedule to itself. Longer than a run's ledger and kyc requests take: a crashed run's
   * schedules are taken again after it (and their payout references keep them from paying twice).
   */
  PAYOUTS_SCHEDULE_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
};
