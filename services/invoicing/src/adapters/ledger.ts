/**
 * The ledger as invoicing sees it (usecases/ports.ts LedgerClient), over the kit's natsLedgerPort: posts (no answer
 * is LedgerOutcomeUnknown) and the aging reads on their internal subjects (no answer: service_unavailable).
 */
import { schemas } from "@treasury/contracts";
import { natsLedgerPort, type NatsConnection } from "@treasury/service-kit";
import type { LedgerClient } from "../usecases/ports.ts";

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  const port = natsLedgerPort(nc, prefix, { caller: "invoicing", timeoutMs });
  return {
    post: (req) => port.post(req),
    async receivableBalances(tenant, asOf) {
      const body = await port.read(schemas.RECEIVABLE_BALANCES_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, as_of: asOf.toISOString() });
      return schemas.ReceivableBalance.array().parse(body["receivables"]);
    },
    async openBills(tenant, asOf) {
      const body = await port.read(schemas.OPEN_BILLS_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, as_of: asOf.toISOString() });
      return schemas.OpenBill.array().parse(body["bills"]);
    },
  };
}
