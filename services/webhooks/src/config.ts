/** The webhooks service's own environment keys (the kit adds BaseEnv); the one place they are read. */
import { z } from "zod";
import { DEFAULT_RETRY_SCHEDULE_MS, parseSchedule } from "./domain/schedule.ts";

export const WebhooksEnv = {
  /** Delays before attempts 1…n, comma-separated milliseconds; its length is the number of attempts. */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default(DEFAULT_RETRY_SCHEDULE_MS.join(","))
    .transform((s, ctx) => {
      try {
        return parseSchedule(s);
      } catch (e) {
        ctx.addIssue({ code: "custom", message: (e as Error).message });
        return z.NEVER;
      }
    }),
  /** Whole-attempt timeout (connect + response headers + first KiB of body). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** Poll for due deliveries this often even without a NOTIFY (retries come due without one). */
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  /** Attempts in flight in this process, over all endpoints. */
  WEBHOOK_CONCURRENCY_MAX: z.coerce.number().int().min(1).max(1_000).default(64),
  /** Attempts in flight in this process to one endpoint: a slow endpoint holds at most this many slots. */
  WEBHOOK_ENDPOINT_CONCURRENCY_MAX: z.coerce.number().int().min(1).max(100).default(4),
  /**
   * Pullers on the one durable fan-out consumer in this process. The kit's consumer handles one event per
   * transaction at a time; several pullers on the same durable (the JetStream way to scale a consumer, as
   * replicas would) let PostgreSQL group their commits. Fan-out does not depend on order.
   */
  WEBHOOK_FANOUT_CONSUMERS: z.coerce.number().int().min(1).max(32).default(4),
  /**
   * Finished deliveries (delivered or failed) are deleted this many days after their last attempt, with their
   * stored bodies and responses; 0 keeps them forever. Listing, retrying and replaying reach back this far.
   */
  WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  /**
   * "true" lets sandbox endpoints point at private and loopback addresses (http to localhost too): for the dev
   * stack and tests with receivers on the same machine. Off, sandbox URLs follow the live rules, so a sandbox key
   * cannot reach the host's own network. Live endpoints never may.
   */
  WEBHOOK_ALLOW_PRIVATE_URLS: z.enum(["true", "false"]).default("false"),
  /**
   * Keys that seal endpoint signing secrets at rest: `kid1:base64key,kid2:base64key` (32-byte keys, the kit's key
   * ring, as kyc's PII_KEYS). Without them the service starts but reports not ready: endpoints cannot be created
   * or rotated (503 service_unavailable) and deliveries wait in the database until keys are configured.
   */
  WEBHOOK_SECRET_KEYS: z.string().min(1).optional(),
  /** The key new secrets are sealed with; optional when WEBHOOK_SECRET_KEYS holds one key. The others only open older rows. */
  WEBHOOK_SECRET_ACTIVE_KEY_ID: z.string().min(1).optional(),
  /**
   * How often the reseal pass runs (it also runs on start): clear secrets are sealed and secrets sealed with a
   * retired key are sealed again with the active one. 0 runs it on start only.
   */
  WEBHOOK_RESEAL_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(600_000),
  /** Endpoints re-sealed per transaction. */
  WEBHOOK_RESEAL_BATCH_MAX: z.coerce.number().int().min(1).max(10_000).default(200),
  /** How long the previous secret keeps signing after rotate_secret. */
  WEBHOOK_ROTATION_OVERLAP_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 24 * 3600 * 1000)
    .default(24 * 3600 * 1000),
  /**
   * After `admin webhooks rotate-signing-key`, how long the previous Ed25519 key keeps signing beside the new one
   * and stays in the JWKS (the command's --overlap-hours overrides it). Longer than the JWKS's cache lifetime, so
   * a receiver holding the old set still verifies.
   */
  WEBHOOK_SIGNING_KEY_OVERLAP_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(90 * 24 * 3600 * 1000)
    .default(7 * 24 * 3600 * 1000),
};

export interface WebhooksConfig {
  retryScheduleMs: number[];
  timeoutMs: number;
  pollIntervalMs: number;
  concurrencyMax: number;
  endpointConcurrencyMax: number;
  rotationOverlapMs: number;
  signingKeyOverlapMs: number;
  fanoutConsumers: number;
  retentionDays: number;
  allowPrivateUrls: boolean;
}
