/**
 * What a refund request is, independent of how it arrived (pure). Two client requests are the same refund when
 * they have the same request key:
 *   - the client's idempotency_key, when it sends one;
 *   - otherwise a key derived from the request: sale reference + amount + external_refund_id (docs/api.md,
 *     Idempotency), so a retry after a timeout that carried no key still finds the first refund;
 *   - for an approved refund request, the request's id.
 * The ledger reference is fixed when the intent is recorded and derived from the service's own ids, never from a
 * client key: `refund:<refund id>`, or `refund_request:<request id>` for an approval. Every driver (the request,
 * a retry, the reconciler) reads it from the stored row, so one refund moves money once.
 */
import { requestHash } from "@treasury/service-kit";

export type RefundFrom = "both" | "platform_only" | "creator_only";
export type ShortfallPolicy = "receivable" | "refuse";

/** A refund as asked for, normalised (refund_from defaults to both; one name for the sale). */
export interface RefundIntent {
  sale_reference: string;
  /** Absent: everything that remains refundable on the refund_from side. */
  amount: number | undefined;
  refund_from: RefundFrom;
  reason: string;
  external_refund_id: string | undefined;
  idempotency_key: string | undefined;
  metadata: Record<string, unknown>;
}

export interface CreateRefundInput {
  original_sale_reference?: string | undefined;
  sale_reference?: string | undefined;
  reason: string;
  amount?: number | undefined;
  refund_from?: RefundFrom | undefined;
  external_refund_id?: string | undefined;
  idempotency_key?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export function intentOf(body: CreateRefundInput): RefundIntent {
  const sale = body.original_sale_reference ?? body.sale_reference;
  if (sale === undefined) throw new Error("the body schema requires a sale reference");
  return {
    sale_reference: sale,
    amount: body.amount,
    refund_from: body.refund_from ?? "both",
    reason: body.reason,
    external_refund_id: body.external_refund_id,
    idempotency_key: body.idempotency_key,
    metadata: body.metadata ?? {},
  };
}

/** The hash that tells a replay from a different request under the same key (the key itself is not part of it). */
export function intentHash(intent: RefundIntent): string {
  const { idempotency_key: _key, ...rest } = intent;
  return requestHash({ ...rest, amount: rest.amount ?? null, external_refund_id: rest.external_refund_id ?? null });
}

export function requestKeyOf(intent: RefundIntent): string {
  if (intent.idempotency_key !== undefined) return `key:${intent.idempotency_key}`;
  return `derived:${requestHash([intent.sale_reference, intent.amount ?? null, intent.external_refund_id ?? null])}`;
}

export function refundRequestKey(refundRequestId: string): string {
  return `refund_request:${refundRequestId}`;
}

export function ledgerReferenceOf(refundId: string, refundRequestId: string | null): string {
  return refundRequestId === null ? `refund:${refundId}` : `refund_request:${refundRequestId}`;
}

/**
 * Ledger refusals that are final for this request: nothing moved, and sending the same request again cannot
 * succeed. The refund becomes `failed` with the code and reason.
 */
export const DEFINITIVE_REFUSALS: ReadonlySet<string> = new Set([
  "original_sale_not_found",
  "sale_already_reversed",
  "sale_already_fully_refunded",
  "refund_amount_exceeds_remaining",
  "insufficient_balance",
  "wallet_not_active",
  "wallet_not_found",
  "participant_not_found",
]);
