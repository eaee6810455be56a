/** Webhook endpoints, their deliveries and the sandbox test event (docs/api.md, Webhooks). */
import { z } from "zod";
import { ReferenceId } from "../ids.ts";
import { bool, isoDate, obj, str } from "./common.ts";

/**
 * How long a receiver may keep the webhook JWKS: a rotated key signs beside the new one for far longer
 * (WEBHOOK_SIGNING_KEY_OVERLAP_MS), so a set fetched up to this long ago still verifies every delivery.
 */
export const WEBHOOK_JWKS_MAX_AGE_S = 300;

const eventFilter = z.array(str(64)).max(50);
/** How deliveries are signed: Standard Webhooks `v1` with the endpoint's secret, or `v1a` with the platform's key (JWKS). */
export const WebhookSignatureScheme = z.enum(["hmac_sha256", "ed25519"]);
/** `per_endpoint`: an endpoint's events one at a time, in the order they were published. */
export const WebhookOrdering = z.enum(["none", "per_endpoint"]);
export const WebhooksBody = z.discriminatedUnion(
  "action",
  [
    z.object({ action: z.literal("list") }),
    z.object({
      action: z.literal("create"),
      url: str(2048).min(1),
      description: str(1000).optional(),
      events: eventFilter.optional(),
      signature_scheme: WebhookSignatureScheme.optional(),
      ordering: WebhookOrdering.optional(),
    }),
    z.object({
      action: z.literal("update"),
      endpoint_id: str(100),
      url: str(2048).optional(),
      description: str(1000).optional(),
      events: eventFilter.optional(),
      is_active: bool.optional(),
      signature_scheme: WebhookSignatureScheme.optional(),
      ordering: WebhookOrdering.optional(),
    }),
    z.object({ action: z.literal("delete"), endpoint_id: str(100) }),
    z.object({ action: z.literal("test"), endpoint_id: str(100) }),
    z.object({
      action: z.literal("deliveries"),
      endpoint_id: str(100).optional(),
      event_type: str(64).optional(),
      status: z.enum(["pending", "retrying", "delivered", "failed"]).optional(),
      limit: z.number().int().min(1).max(100).optional(),
    }),
    z.object({ action: z.literal("retry"), delivery_id: str(100) }),
    z.object({ action: z.literal("replay"), delivery_id: str(100).optional(), endpoint_id: str(100).optional(), since: isoDate.optional() }),
    z.object({ action: z.literal("rotate_secret"), endpoint_id: str(100) }),
  ],
  { error: "action must be one of list, create, update, delete, test, deliveries, retry, replay, rotate_secret" },
);
export const SandboxWebhookTestBody = z.object({ idempotency_key: ReferenceId.optional(), event_type: str(64).optional(), payload: obj.optional() });
