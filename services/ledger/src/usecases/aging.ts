/**
 * What the invoicing service reads for AR and AP aging (`svc.ledger.internal.receivableBalances` and
 * `…openBills`): the ledger's receivables per invoice and its open bills, as they stood at a time, from the
 * entries of transactions whose accounting time (effective_at, else created_at) is at or before it. The port is
 * declared here, beside its use cases; store/aging.ts implements it.
 */
import { DomainError, schemas, type Tenant } from "@treasury/contracts";

export interface AgingReader {
  /** Non-zero accounts_receivable balances per invoice as of `asOf`, at most `limit` rows. */
  receivableBalances(tenant: Tenant, asOf: Date, limit: number): Promise<schemas.ReceivableBalance[]>;
  /** Bills recorded by `asOf` with what was paid of them by then, those still owing, at most `limit` rows. */
  openBills(tenant: Tenant, asOf: Date, limit: number): Promise<schemas.OpenBill[]>;
}

/** More rows than an answer carries is refused whole: an aging report that silently dropped rows would lie. */
function bounded<T>(rows: T[], what: string): T[] {
  if (rows.length > schemas.AGING_ROWS_MAX) {
    throw new DomainError("validation_error", `More than ${schemas.AGING_ROWS_MAX} ${what} are open; aging reads at most that many`);
  }
  return rows;
}

export async function receivableBalances(reader: AgingReader, tenant: Tenant, asOf: Date): Promise<schemas.ReceivableBalance[]> {
  return bounded(await reader.receivableBalances(tenant, asOf, schemas.AGING_ROWS_MAX + 1), "receivables");
}

export async function openBills(reader: AgingReader, tenant: Tenant, asOf: Date): Promise<schemas.OpenBill[]> {
  return bounded(await reader.openBills(tenant, asOf, schemas.AGING_ROWS_MAX + 1), "bills");
}
