/** `svc.ledger.internal.salesActivity`: the risk service's read of recent sales (only risk may call it: INTERNAL_CALLS). */
import { parseOrThrow, schemas, tenantOf } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { salesActivity, type SalesActivityReader } from "../usecases/sales-activity.ts";

export function registerSalesActivity(svc: Pick<Service, "handleInternal">, reader: SalesActivityReader): void {
  svc.handleInternal(
    schemas.SALES_ACTIVITY_OPERATION,
    (payload) => parseOrThrow(schemas.SalesActivityRequest, payload),
    async (req) => ({ activity: await salesActivity(reader, tenantOf(req), req.participant_id, req.window_days) }),
  );
}
