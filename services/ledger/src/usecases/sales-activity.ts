/**
 * The sales figures the risk service reads for its payout_ratio and refund_rate policies
 * (`svc.ledger.internal.salesActivity`): sales recorded in a recent window, and what was refunded of them. The
 * port is declared here, beside its one use case; store/sales-activity.ts implements it.
 */
import type { schemas, Tenant } from "@treasury/contracts";

export interface SalesActivityReader {
  /** Sales recorded since midnight UTC `windowDays` days ago (the participant's, or the org's without one). */
  salesActivity(tenant: Tenant, participantId: string | undefined, windowDays: number): Promise<schemas.SalesActivity>;
}

export function salesActivity(
  reader: SalesActivityReader,
  tenant: Tenant,
  participantId: string | undefined,
  windowDays: number,
): Promise<schemas.SalesActivity> {
  return reader.salesActivity(tenant, participantId, windowDays);
}
