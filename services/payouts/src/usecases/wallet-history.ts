/**
 * Reading a creator wallet's history from the ledger (its entries, newest first, a page at a time), for what
 * payouts compute from it: the balance a schedule's delay allows, and a payout's statement.
 */
import type { Tenant } from "@treasury/contracts";
import type { LedgerClient, WalletEntry } from "./ports.ts";

/** The ledger's largest page of entries. */
export const ENTRY_PAGE_MAX = 100;

/** How much history one read walks at most (a statement or a delayed balance further back is cut there). */
export const HISTORY_ENTRIES_MAX = 20_000;

/**
 * Visits the wallet's entries newest first until `visit` answers true (stop), the history ends, or
 * HISTORY_ENTRIES_MAX entries were read. Answers whether it stopped on `visit`. Entries posted while it reads
 * push older ones to later offsets: an entry seen twice is visited once, so none is counted twice.
 */
export async function walkEntries(
  ledger: Pick<LedgerClient, "listWalletEntries">,
  tenant: Tenant,
  walletId: string,
  visit: (e: WalletEntry) => boolean,
): Promise<boolean> {
  const seen = new Set<string>();
  for (let offset = 0; offset < HISTORY_ENTRIES_MAX; offset += ENTRY_PAGE_MAX) {
    const { entries } = await ledger.listWalletEntries(tenant, walletId, { limit: ENTRY_PAGE_MAX, offset });
    for (const e of entries) {
      if (seen.has(e.entry_id)) continue;
      seen.add(e.entry_id);
      if (visit(e)) return true;
    }
    if (entries.length < ENTRY_PAGE_MAX) return false;
  }
  return false;
}

/** The wallet's balance as of `at`: after its last entry at or before then (0 before its first). */
export async function balanceAsOf(ledger: Pick<LedgerClient, "listWalletEntries">, tenant: Tenant, walletId: string, at: Date): Promise<number> {
  let balance = 0;
  const found = await walkEntries(ledger, tenant, walletId, (e) => {
    if (Date.parse(e.created_at) > at.getTime()) return false;
    balance = e.balance_after ?? 0;
    return true;
  });
  // History longer than the walk: nothing older is known, so nothing is counted (a later run pays it).
  return found ? balance : 0;
}
