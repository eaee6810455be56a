/** A card refund's state at the processor, as payments keeps it. */
export type ProcessorRefundStatus = "pending" | "succeeded" | "failed";

/** The processor's refund states as ours: `requires_action` still waits; `canceled` never paid the buyer back. */
export function refundStatusOf(status: string | null): ProcessorRefundStatus {
  if (status === "succeeded") return "succeeded";
  if (status === "failed" || status === "canceled") return "failed";
  return "pending";
}
