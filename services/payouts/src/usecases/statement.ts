/**
 * A payout's statement (domain/statement.ts): the creator wallet's entries are read from the ledger, newest
 * first, from this payout's own transaction back to the previous payout's (exclusive), or to the wallet's first
 * entry. JSON, or CSV as a file (`?format=csv`).
 *
 * Errors: payout_not_found (404; a refused request is not shown), invalid_state_transition (409: the payout's
 * ledger transaction is not recorded yet; retry shortly), service_unavailable (the ledger did not answer).
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { PayoutRow } from "../domain/records.ts";
import { buildStatement, statementCsv, type Statement } from "../domain/statement.ts";
import type { PayoutsDeps } from "./deps.ts";
import type { WalletEntry } from "./ports.ts";
import { PAYOUT_KIND } from "./request-payout.ts";
import { walkEntries } from "./wallet-history.ts";

type StatementQuery = z.output<typeof schemas.PayoutStatementQuery>;

const PAYOUT_ID_RE = /^po_[A-Za-z0-9]{1,64}$/;

/** A shown payout of the tenant (a refused request moved nothing and is not shown). */
export async function statementPayout(deps: Pick<PayoutsDeps, "payouts">, tenant: Tenant | undefined, id: string): Promise<PayoutRow> {
  const row = !PAYOUT_ID_RE.test(id) ? undefined : tenant === undefined ? await deps.payouts.findById(id) : await deps.payouts.findPayout(tenant, id);
  if (row === undefined || row.status === "refused")
    throw new DomainError("payout_not_found", `Payout ${id} not found`, { hint: "GET /v1/payouts lists payouts" });
  return row;
}

/** The statement of a payout row: its wallet's entries from its own transaction back to the previous payout. */
export async function statementOf(deps: Pick<PayoutsDeps, "ledger">, row: PayoutRow): Promise<Statement> {
  const txn = row.transaction_id;
  if (txn === null) {
    throw new DomainError("invalid_state_transition", `Payout ${row.id} has no ledger transaction yet`, { hint: "Retry in a few seconds" });
  }
  const tenant: Tenant = { orgId: row.org_id, livemode: row.livemode };
  const walletId = row.wallet_id ?? (await deps.ledger.getParticipant(tenant, row.participant_id)).wallet_id;
  const newestFirst: WalletEntry[] = [];
  let previousAt: string | undefined;
  let reached = false;
  await walkEntries(deps.ledger, tenant, walletId, (e) => {
    if (!reached && e.transaction_id !== txn) return false;
    reached = true;
    if (e.transaction_type === PAYOUT_KIND && e.transaction_id !== txn) {
      previousAt = e.created_at;
      return true;
    }
    newestFirst.push(e);
    return false;
  });
  if (!reached) throw new Error(`payout ${row.id}: transaction ${txn} is not in wallet ${walletId}'s history`);
  return buildStatement(row.id, newestFirst.reverse(), previousAt);
}

export async function getPayoutStatement(deps: Pick<PayoutsDeps, "payouts" | "ledger">, tenant: Tenant, id: string, query: StatementQuery) {
  const statement = await statementOf(deps, await statementPayout(deps, tenant, id));
  if (query.format !== "csv") return { statement };
  return { file: { content_type: "text/csv; charset=utf-8", filename: `statement-${statement.payout_id}.csv`, content: statementCsv(statement) } };
}
