/** The tax service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

const digits = (n: number) => z.string().regex(new RegExp(`^[0-9]{${n}}$`), { message: `must be ${n} digits` });

export const TaxEnv = {
  /**
   * Keys that seal TINs at rest: `kid1:base64key,kid2:base64key` (32-byte keys), the ring format of the kyc and
   * payouts services. Without them the service starts, but refuses tax profiles and FIRE files (503).
   */
  PII_KEYS: z.string().min(1).optional(),
  PII_ACTIVE_KEY_ID: z.string().min(1).optional(),
  /** Deadline of one ledger read (a page of a year's figures). */
  TAX_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(20_000),
  /** Participants per ledger page and per write transaction of a generation. */
  TAX_GENERATE_PAGE_SIZE: z.coerce.number().int().min(1).max(2_000).default(1_000),
  /**
   * How long `POST /v1/tax/documents/generate` waits for its job before answering 202 with the job to poll (never
   * past the request's deadline); a year that ends sooner is answered 200, finished.
   */
  TAX_GENERATE_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** How long a runner holds a generation job past its last page: a stopped runner's job is taken up after it. */
  TAX_GENERATION_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** Between the runner's passes over jobs nobody holds (0: only when a generation is asked for). */
  TAX_GENERATION_INTERVAL_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  /** The largest export the API answers (bytes): an answer travels in one NATS message of at most 1 MiB. */
  TAX_EXPORT_BYTES_MAX: z.coerce.number().int().min(1_024).max(1_000_000).default(900_000),
  /** Who transmits FIRE files: the IRS's Transmitter Control Code, TIN and name, with its contact. */
  TAX_TRANSMITTER_TCC: z
    .string()
    .regex(/^[A-Z0-9]{5}$/, { message: "must be 5 letters or digits" })
    .default("00000"),
  TAX_TRANSMITTER_TIN: digits(9).default("000000000"),
  TAX_TRANSMITTER_NAME: z.string().min(1).max(80).default("Treasury platform"),
  TAX_CONTACT_NAME: z.string().min(1).max(40).default("Tax operations"),
  TAX_CONTACT_PHONE: z
    .string()
    .regex(/^[0-9]{10,15}$/)
    .default("0000000000"),
  TAX_CONTACT_EMAIL: z.string().email().max(50).default("tax@treasury.invalid"),
  /** The payer on every form and A record (the platform settling its sellers' sales), and its address. */
  TAX_PAYER_NAME: z.string().min(1).max(40).default("Treasury platform"),
  TAX_PAYER_TIN: digits(9).default("000000000"),
  TAX_PAYER_ADDRESS: z.string().min(1).max(40).default("1 Main Street"),
  TAX_PAYER_CITY: z.string().min(1).max(40).default("Wilmington"),
  TAX_PAYER_STATE: z
    .string()
    .regex(/^[A-Z]{2}$/)
    .default("DE"),
  TAX_PAYER_ZIP: z
    .string()
    .regex(/^[0-9]{5}([0-9]{4})?$/)
    .default("19801"),
};
