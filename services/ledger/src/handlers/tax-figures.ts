/** `svc.ledger.internal.taxFigures` and `taxSources`: the tax service's reads (only tax may call them: INTERNAL_CALLS). */
import { parseOrThrow, schemas, tenantOf } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { taxFigures, taxSources, type TaxFiguresReader } from "../usecases/tax-figures.ts";

export function registerTaxFigures(svc: Pick<Service, "handleInternal">, reader: TaxFiguresReader): void {
  svc.handleInternal(
    schemas.TAX_FIGURES_OPERATION,
    (payload) => parseOrThrow(schemas.TaxFiguresRequest, payload),
    async (req) => taxFigures(reader, tenantOf(req), req),
  );
  svc.handleInternal(
    schemas.TAX_SOURCES_OPERATION,
    (payload) => parseOrThrow(schemas.TaxSourcesRequest, payload),
    async (req) => taxSources(reader, tenantOf(req), req),
  );
}
