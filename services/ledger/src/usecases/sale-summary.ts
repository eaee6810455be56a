/** The summary of a recorded sale other services read before they ask for a refund (refunds service). */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { LedgerDeps } from "./deps.ts";

/** Errors: original_sale_not_found. */
export async function saleSummary(deps: Pick<LedgerDeps, "sales">, tenant: Tenant, saleReference: string): Promise<schemas.SaleSummary> {
  const sale = await deps.sales.find(tenant, saleReference);
  if (sale === undefined) throw new DomainError("original_sale_not_found", `Sale ${saleReference} not found`);
  return {
    sale_reference: sale.sale_reference,
    gross: sale.gross,
    refunded_amount: sale.refunded_amount,
    remaining_amount: sale.gross - sale.refunded_amount,
    reversed: sale.reversed,
  };
}
