/**
 * The ledger owns sales and refunds; payout_ratio and refund_rate read its figures through the kit's ledger port
 * (`svc.ledger.internal.salesActivity`, in the tenant's org and environment). A ledger that does not answer is a
 * retryable service_unavailable: nothing was evaluated or counted yet.
 */
import { parseOrThrow, schemas } from "@treasury/contracts";
import type { LedgerPort } from "@treasury/service-kit";
import type { LedgerActivity } from "../usecases/ports.ts";

export function ledgerActivity(port: LedgerPort): LedgerActivity {
  return {
    async salesActivity(tenant, participantId, windowDays) {
      const payload = {
        org_id: tenant.orgId,
        livemode: tenant.livemode,
        window_days: windowDays,
        ...(participantId === undefined ? {} : { participant_id: participantId }),
      };
      const answer = await port.read(schemas.SALES_ACTIVITY_OPERATION, payload);
      return parseOrThrow(schemas.SalesActivity, answer["activity"], "ledger answer");
    },
  };
}
