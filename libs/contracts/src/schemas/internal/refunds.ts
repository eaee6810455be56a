/**
 * What the refunds service asks the ledger and payments, and what payments tells refunds back; not part of the
 * public API.
 */
import { z } from "zod";
import { PositiveCents } from "../../money.ts";
import { InternalScope } from "./scope.ts";

/**
 * The refunds service asks the ledger about a sale before it records a refund request for it: the sale exists in
 * the caller's org and environment, and what remains refundable. Errors: original_sale_not_found.
 */
export const SALE_SUMMARY_OPERATION = "internal.saleSummary";
export const SaleSummaryRequest = z.object({ ...InternalScope, sale_reference: z.string().min(1).max(255) });
export interface SaleSummary {
  sale_reference: string;
  gross: number;
  refunded_amount: number;
  remaining_amount: number;
  reversed: boolean;
}

/**
 * Live card refunds (request/reply between refunds and payments, never through the gateway). Refunds asks payments
 * to refund the card payment behind a sale once the ledger has taken the refund back; payments answers
 * `{processor_refund: null}` when the sale was not paid through the card processor (nothing to call), else the
 * processor refund's state. Payments tells refunds when the processor settles it (succeeded or failed).
 */
export const PROCESSOR_REFUND_OPERATION = "internal.processorRefund";
export const ProcessorRefundRequest = z.object({
  ...InternalScope,
  refund_id: z.string().min(1).max(100),
  sale_reference: z.string().min(1).max(255),
  amount: PositiveCents,
});
export const PROCESSOR_REFUND_STATUSES = ["pending", "succeeded", "failed"] as const;
export interface ProcessorRefundState {
  processor: "stripe";
  processor_refund_id: string | null;
  status: (typeof PROCESSOR_REFUND_STATUSES)[number];
  failure_reason: string | null;
}
export const PROCESSOR_REFUND_SETTLED_OPERATION = "internal.processorRefundSettled";
export const ProcessorRefundSettled = z.object({
  ...InternalScope,
  refund_id: z.string().min(1).max(100),
  processor_refund_id: z.string().min(1).max(255),
  status: z.enum(["succeeded", "failed"]),
  failure_reason: z.string().max(1000).nullable(),
});
