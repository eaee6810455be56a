/**
 * sandboxFailCheckout, and the processor's word that a live session expired or its payment failed: a pending (or
 * expired) session becomes failed and `checkout.failed` is written in the same transaction. A session whose completion is in flight or done is refused: failing it could contradict
 * money that has moved. Failing a failed session answers it again.
 *
 * Errors: checkout_session_not_found, checkout_in_progress (completing), checkout_not_pending (completed).
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import type { CheckoutRow } from "../domain/records.ts";
import { failedEvent } from "./complete-checkout.ts";
import type { PaymentsDeps } from "./deps.ts";
import { presentCheckout } from "./present.ts";

export async function failCheckout(deps: PaymentsDeps, tenant: Tenant, id: string, reason: string | undefined, code = "sandbox_failed"): Promise<CheckoutRow> {
  return deps.checkouts.locked(tenant, id, async (row, tx) => {
    if (row === undefined) throw new DomainError("checkout_session_not_found", `Checkout session ${id} not found`);
    const now = deps.now();
    if (row.status === "failed") return row;
    if (row.status === "completing") {
      throw new DomainError("checkout_in_progress", `Checkout session ${id} is completing and cannot be failed`, {
        extra: { checkout_session: presentCheckout(row, now) },
      });
    }
    if (row.status === "completed") {
      throw new DomainError("checkout_not_pending", `Checkout session ${id} is completed and cannot be failed`, {
        hint: "Refund the sale with POST /v1/refunds and its sale_reference",
        extra: { checkout_session: presentCheckout(row, now) },
      });
    }
    const failed = await tx.fail({ failure_code: code, failure_reason: reason ?? "Failed in sandbox" }, failedEvent);
    if (failed === undefined) throw new Error(`checkout ${id} vanished under its lock`);
    return failed;
  });
}
