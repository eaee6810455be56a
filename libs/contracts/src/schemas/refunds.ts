/** Refunds and refund requests (docs/api.md, Refunds and refund requests). */
import { z } from "zod";
import { ReferenceId } from "../ids.ts";
import { PositiveCents } from "../money.ts";
import { email, Metadata, pagingInt, str } from "./common.ts";

export const REFUND_FROM_VALUES = ["both", "platform_only", "creator_only"] as const;
const refundFrom = z.enum(REFUND_FROM_VALUES, { error: "must be one of both, platform_only, creator_only" });
export const REFUND_STATUSES = ["pending", "completed", "failed"] as const;
export const REFUND_REQUEST_STATUSES = ["created", "processing", "completed", "rejected", "cancelled", "failed"] as const;
export type RefundRequestStatus = (typeof REFUND_REQUEST_STATUSES)[number];
/**
 * Who cancelled a cancelled refund request (its `cancelled_by`): a client through the cancel operation (`api`), or
 * the service itself when the request expired unreviewed at its `expires_at` (`schedule`).
 */
export const REFUND_REQUEST_CANCELLED_BY = ["api", "schedule"] as const;
export type RefundRequestCancelledBy = (typeof REFUND_REQUEST_CANCELLED_BY)[number];
/** The `cancellation_reason` of a refund request that expired (`cancelled_by: "schedule"`). */
export const REFUND_REQUEST_EXPIRED_REASON = "expired";
/** A sale reference: checkout sales are `checkout:<session id>`, record-sale sales the client's reference_id. */
const saleReference = ReferenceId;
export const ListRefundsQuery = z.object({
  sale_reference: saleReference.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const CreateRefundBody = z
  .object({
    original_sale_reference: saleReference.optional(),
    sale_reference: saleReference.optional(),
    reason: str(1000).min(1, { message: "must not be empty" }),
    amount: PositiveCents.optional(),
    refund_from: refundFrom.optional(),
    external_refund_id: str(255).min(1, { message: "must not be empty" }).optional(),
    idempotency_key: ReferenceId.optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.original_sale_reference !== undefined || b.sale_reference !== undefined, {
    message: "original_sale_reference is required",
    path: ["original_sale_reference"],
  })
  .refine((b) => b.original_sale_reference === undefined || b.sale_reference === undefined || b.original_sale_reference === b.sale_reference, {
    message: "must equal sale_reference when both are given",
    path: ["original_sale_reference"],
  });
export const CreateRefundRequestBody = z.object({
  sale_reference: saleReference,
  customer_id: str(255).min(1, { message: "must not be empty" }).optional(),
  customer_email: email.optional(),
  amount: PositiveCents.optional(),
  reason: str(1000).optional(),
  refund_from: refundFrom.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const ListRefundRequestsQuery = z.object({
  status: z.enum(REFUND_REQUEST_STATUSES, { error: `must be one of ${REFUND_REQUEST_STATUSES.join(", ")}` }).optional(),
  sale_reference: saleReference.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const RefundRequestActionBody = z.object({ reason: str(1000).optional(), reviewed_by_actor: str(255).optional(), metadata: Metadata.optional() });
