/**
 * A payout statement: what a payout is made of, from the creator wallet's ledger entries since the previous
 * payout (exclusive) up to and including this payout's own transaction, one line per ledger transaction. The
 * opening balance is the wallet's balance before the first line; opening + Σ lines = closing, to the cent, and
 * the payout's own line takes the balance to the closing figure. Pure: the entries come from the ledger.
 */
import type { schemas } from "@treasury/contracts";

export type StatementLineType = (typeof schemas.STATEMENT_LINE_TYPES)[number];

export interface StatementLine {
  transaction_id: string;
  type: StatementLineType;
  amount_cents: number;
  occurred_at: string;
  reference: string;
}

export interface Statement {
  payout_id: string;
  period_start: string;
  period_end: string;
  opening_balance_cents: number;
  lines: StatementLine[];
  closing_balance_cents: number;
}

/** What a statement reads of one ledger entry of the creator wallet (the ledger's listWalletEntries row). */
export interface WalletEntry {
  entry_type: "debit" | "credit";
  amount: number;
  transaction_id: string;
  reference_id: string;
  transaction_type: string;
  balance_after: number | null;
  created_at: string;
}

/** An entry's effect on a creator wallet (a liability: credits raise it). */
export function signedAmount(e: Pick<WalletEntry, "entry_type" | "amount">): number {
  return e.entry_type === "credit" ? e.amount : -e.amount;
}

/** The ledger kind of a payout's own transaction (request-payout.ts): what ends one statement's period. */
export const PAYOUT_TRANSACTION_KIND = "payout";

/**
 * The ledger's transaction kinds (ledger, payments, refunds and payouts services) as statement lines. A lost
 * dispute is booked with the refund kind under a `dispute:` reference; a hold moves no balance and shows only
 * when its release executes a transfer; kinds not named here (top-ups, withdrawals, later kinds) are adjustments.
 */
const KIND_TYPES: Readonly<Record<string, StatementLineType>> = {
  sale: "sale",
  checkout_sale: "sale",
  refund: "refund",
  reversal: "refund",
  dispute_hold: "dispute",
  dispute_release: "dispute",
  dispute_fee: "fee",
  reserve: "reserve",
  reserve_hold: "reserve",
  reserve_release: "reserve_release",
  hold: "transfer",
  hold_release: "transfer",
  transfer: "transfer",
  payout: "payout",
  payout_return: "payout",
};

export function lineTypeOf(kind: string, reference: string): StatementLineType {
  if (kind === "refund" && reference.startsWith("dispute:")) return "dispute";
  return KIND_TYPES[kind] ?? "adjustment";
}

/** Consecutive entries of one transaction (the ledger writes a transaction's entries together) as one line. */
function linesOf(entriesOldestFirst: readonly WalletEntry[]): StatementLine[] {
  const lines: StatementLine[] = [];
  let last: StatementLine | undefined;
  for (const e of entriesOldestFirst) {
    if (last?.transaction_id === e.transaction_id) {
      last.amount_cents += signedAmount(e);
      continue;
    }
    last = {
      transaction_id: e.transaction_id,
      type: lineTypeOf(e.transaction_type, e.reference_id),
      amount_cents: signedAmount(e),
      occurred_at: e.created_at,
      reference: e.reference_id,
    };
    lines.push(last);
  }
  return lines;
}

/**
 * The statement of `payoutId` from its period's entries, oldest first (the first is the earliest movement
 * after the previous payout, the last ones are the payout's own), and when the previous payout happened.
 */
export function buildStatement(payoutId: string, entriesOldestFirst: readonly WalletEntry[], previousPayoutAt: string | undefined): Statement {
  const first = entriesOldestFirst[0];
  const newest = entriesOldestFirst[entriesOldestFirst.length - 1];
  if (first === undefined || newest === undefined || first.balance_after === null || newest.balance_after === null) {
    throw new Error(`statement of ${payoutId}: no wallet entries with balances`);
  }
  const lines = linesOf(entriesOldestFirst);
  const opening = first.balance_after - signedAmount(first);
  const closing = newest.balance_after;
  const sum = lines.reduce((s, l) => s + l.amount_cents, 0);
  // The ledger's running balances and its entries must agree; a statement that does not add up is not answered.
  if (opening + sum !== closing) throw new Error(`statement of ${payoutId}: ${opening} + ${sum} != ${closing}`);
  return {
    payout_id: payoutId,
    period_start: previousPayoutAt ?? first.created_at,
    period_end: newest.created_at,
    opening_balance_cents: opening,
    lines,
    closing_balance_cents: closing,
  };
}

/**
 * One field of RFC 4180 CSV: quoted (with quotes doubled) when it holds a comma, a quote, CR or LF, or starts or
 * ends with a space, which some readers trim. Text a spreadsheet would run as a formula (an integrator's reference
 * starting with =, +, -, @, tab or CR) is prefixed with a quote mark, as OWASP advises; numbers are left as they are.
 */
export function csvField(value: string | number): string {
  const s = typeof value === "string" && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_HEADER = ["occurred_at", "type", "transaction_id", "reference", "amount_cents", "balance_cents"];

/**
 * The statement as CSV (RFC 4180: CRLF line ends, a header row): the opening balance, one row per line with the
 * balance after it, and the closing balance.
 */
export function statementCsv(s: Statement): string {
  const rows: (string | number)[][] = [CSV_HEADER, [s.period_start, "opening_balance", "", "", "", s.opening_balance_cents]];
  let balance = s.opening_balance_cents;
  for (const l of s.lines) {
    balance += l.amount_cents;
    rows.push([l.occurred_at, l.type, l.transaction_id, l.reference, l.amount_cents, balance]);
  }
  rows.push([s.period_end, "closing_balance", "", "", "", s.closing_balance_cents]);
  return rows.map((r) => r.map(csvField).join(",")).join("\r\n") + "\r\n";
}
