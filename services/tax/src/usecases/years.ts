/** Which tax years an operation accepts, on the tenant's clock (a sandbox's test clock may be in another year). */
import { DomainError, type Tenant } from "@treasury/contracts";
import type { TaxDeps } from "./ports.ts";

/** Errors: invalid_tax_year (a year that has not begun). */
export function checkYearBegun(deps: Pick<TaxDeps, "now">, tenant: Tenant, taxYear: number): void {
  const current = deps.now(tenant).getUTCFullYear();
  if (taxYear > current) {
    throw new DomainError("invalid_tax_year", `Tax year ${taxYear} has not begun (it is ${current})`, {
      details: [{ path: "tax_year", message: `must be ${current} or earlier` }],
    });
  }
}

/** Errors: invalid_tax_year, tax_year_not_ended (documents are filed once the year's figures are final). */
export function checkYearEnded(deps: Pick<TaxDeps, "now">, tenant: Tenant, taxYear: number): void {
  checkYearBegun(deps, tenant, taxYear);
  const current = deps.now(tenant).getUTCFullYear();
  if (taxYear === current) {
    throw new DomainError("tax_year_not_ended", `Tax year ${taxYear} has not ended: its documents can be filed from January 1st, ${taxYear + 1}`, {
      hint: `POST /v1/tax/documents/generate with tax_year ${taxYear} keeps the drafts up to date until then`,
    });
  }
}
