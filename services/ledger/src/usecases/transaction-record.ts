/**
 * The record of one transaction as the ledger wrote it, for signed ledger proofs (receipts service). Only facts
 * that never change after posting are part of it: its status and reversed amount move with later reversals,
 * so they are left out, as are wallet balances, which a receipt must not reveal.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { LedgerDeps } from "./deps.ts";
import { CURRENCY } from "./present.ts";

/** Errors: transaction_not_found (unknown id, or another org or environment's). */
export async function transactionRecord(deps: Pick<LedgerDeps, "records">, tenant: Tenant, transactionId: string): Promise<schemas.TransactionRecord> {
  const row = await deps.records.transaction(tenant, transactionId);
  if (row === undefined) throw new DomainError("transaction_not_found", `Transaction ${transactionId} not found`);
  const [entries, sale] = await Promise.all([deps.records.entries(tenant, row.id), deps.records.sale(tenant, row.id)]);
  return {
    id: row.id,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    transaction_type: row.kind,
    reference_id: row.reference_id,
    amount: row.amount,
    currency: CURRENCY,
    description: row.description,
    metadata: row.metadata,
    reversal_of: row.reversal_of,
    effective_at: row.effective_at === null ? null : row.effective_at.toISOString(),
    created_at: row.created_at.toISOString(),
    entries: entries.map((e) => ({
      id: e.id,
      account_id: e.account_id,
      account_type: e.account_type,
      entity_id: e.entity_id,
      entry_type: e.entry_type,
      amount: e.amount,
    })),
    sale: sale === undefined ? null : { ...sale },
  };
}
