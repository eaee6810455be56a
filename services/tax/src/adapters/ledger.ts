/**
 * The ledger owns sales and refunds; the tax service reads a year's figures and the transactions behind them
 * through the kit's ledger port (`svc.ledger.internal.taxFigures|taxSources`, in the tenant's org and environment).
 * A ledger that does not answer is a retryable service_unavailable: nothing was written yet.
 */
import { parseOrThrow, schemas } from "@treasury/contracts";
import type { LedgerPort } from "@treasury/service-kit";
import type { LedgerFigures } from "../usecases/ports.ts";

export function ledgerFigures(port: LedgerPort): LedgerFigures {
  return {
    async figures(tenant, req) {
      const answer = await port.read(schemas.TAX_FIGURES_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, ...req });
      return parseOrThrow(schemas.TaxFiguresAnswer, answer, "ledger answer");
    },
    async sources(tenant, req) {
      const answer = await port.read(schemas.TAX_SOURCES_OPERATION, { org_id: tenant.orgId, livemode: tenant.livemode, ...req });
      return parseOrThrow(schemas.TaxSourcesAnswer, answer, "ledger answer");
    },
  };
}
