/**
 * Bank lines that name an invoice (`INV-000042` in their description or reference) pay it: during an auto-match
 * run the ledger asks the invoicing service, which owns invoices, to record a payment of the line's amount against
 * that invoice (idempotent on the bank line's id, so a line pays at most once however many runs see it), and the
 * line is matched to the payment's transaction. Why the ledger asks rather than invoicing consuming an import
 * event: the match must exist before the run's amount-and-date matching, or that matching could pair the line
 * with another transaction of the same amount; and the answer of the run counts it. Lines invoicing declines
 * (no such invoice, void, paid, more than is due) go on to the ordinary matching.
 */
import { schemas, type Tenant } from "@treasury/contracts";
import { sortableId } from "../domain/ids.ts";
import type { BankLineForMatching, NewMatch } from "./rows.ts";
import type { LedgerDeps } from "./deps.ts";

/** The invoicing service as the reconciliation sees it (adapters in service.ts: its internal subject). */
export interface InvoiceLineMatcher {
  matchBankLine(request: schemas.MatchBankLineRequest): Promise<schemas.MatchBankLineAnswer>;
}

/** Lines one run offers to invoicing: a bound on the calls one request makes. */
export const INVOICE_LINES_PER_RUN_MAX = 500;

export type InvoiceLineDeps = Pick<LedgerDeps, "reconciliation"> & { invoiceLines?: InvoiceLineMatcher | undefined };

/** Credit lines whose text carries an invoice number, with that number (upper-cased). */
export function invoiceLines(bank: readonly BankLineForMatching[]): { line: BankLineForMatching; number: string }[] {
  const found: { line: BankLineForMatching; number: string }[] = [];
  for (const line of bank) {
    if (line.amount <= 0) continue;
    const hit = schemas.INVOICE_NUMBER_PATTERN.exec(`${line.description} ${line.reference}`);
    if (hit !== null) found.push({ line, number: hit[0].toUpperCase() });
    if (found.length >= INVOICE_LINES_PER_RUN_MAX) break;
  }
  return found;
}

/** Pays the invoices the lines name and matches each paid line to its payment; answers the ids of matches stored. */
export async function matchInvoiceLines(
  deps: InvoiceLineDeps,
  tenant: Tenant,
  bank: readonly BankLineForMatching[],
): Promise<{ lineIds: Set<string>; matchIds: string[] }> {
  const lineIds = new Set<string>();
  const matchIds: string[] = [];
  const matcher = deps.invoiceLines;
  if (matcher === undefined) return { lineIds, matchIds };
  for (const { line, number } of invoiceLines(bank)) {
    // One at a time: two lines may name one invoice, and the second must see what the first paid.
    const answer = await matcher.matchBankLine({
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      bank_line_id: line.id,
      invoice_number: number,
      amount: line.amount,
      date: line.date,
    });
    if (!answer.matched) continue;
    const match: NewMatch = {
      id: sortableId("rm"),
      bankLineId: line.id,
      transactionId: answer.transaction_id,
      method: "auto",
      confidence: 1,
      daysApart: 0,
      referenceMatch: true,
      note: `invoice ${number}`,
    };
    const inserted = await deps.reconciliation.insertIds(tenant, [match]);
    lineIds.add(line.id);
    matchIds.push(...inserted);
  }
  return { lineIds, matchIds };
}
