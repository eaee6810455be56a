/** The statement formats this library reads. `qfx` is OFX with Intuit's extra fields. */
export const STATEMENT_FORMATS = ["csv", "ofx", "qfx", "camt053", "bai2", "mt940"] as const;
export type StatementFormat = (typeof STATEMENT_FORMATS)[number];
export type FormatOption = StatementFormat | "auto";

/**
 * An exact amount. `amount_decimal` is the value as the bank wrote it (sign normalised, every written decimal
 * kept); `amount` is the same value as an integer in the currency's minor units (ISO 4217), or null when the
 * file carries more decimals than the currency has and they are not zeros (a warning says where).
 */
export interface ExactAmount {
  amount: number | null;
  amount_decimal: string;
  currency: string;
}

export interface Balance extends ExactAmount {
  /** The format's own balance code: OPBD/CLBD/… (camt), 60F/62F/64/… (MT940), LEDGERBAL/AVAILBAL (OFX), 010/015/… (BAI2). */
  kind: string;
  date?: string;
}

export interface Account {
  /** The best identifier the file gives: the IBAN when there is one, else the account number. */
  id: string;
  iban?: string;
  number?: string;
  currency: string;
  bank_id?: string;
  branch_id?: string;
  account_type?: string;
  name?: string;
}

export interface Counterparty {
  name?: string;
  account?: string;
  bank_id?: string;
}

export type TransactionType = "credit" | "debit";

export interface StatementTransaction extends ExactAmount {
  /** Booking date, ISO `YYYY-MM-DD`, as the bank dated it (no time-zone shift). */
  date: string;
  value_date?: string;
  type: TransactionType;
  description: string;
  /** The identifier the customer or the bank gave the line (FITID, MT940 customer reference, EndToEndId…); "" when none. */
  reference: string;
  bank_reference?: string;
  counterparty?: Counterparty;
  /** The format's transaction code (OFX TRNTYPE, BAI2 type code, MT940 type, camt bank transaction code). */
  bank_code?: string;
  /** 1-based line of the input where the transaction starts. */
  raw_line_no: number;
}

/**
 * Whether opening balance + transactions = closing balance. `reconciles` is null when the statement cannot be
 * checked (no opening balance, or balances in another currency); `reason` then says why.
 */
export interface Reconciliation {
  reconciles: boolean | null;
  /** closing − (opening + sum of transactions), in minor units; null when not checked or not representable. */
  difference: number | null;
  difference_decimal: string | null;
  reason?: string;
}

export interface Statement {
  account: Account;
  statement_id?: string;
  opening_balance?: Balance;
  closing_balance?: Balance;
  /** Every balance the statement carries, in file order. */
  balances: Balance[];
  transactions: StatementTransaction[];
  reconciliation: Reconciliation;
}

export interface StatementWarning {
  code: string;
  message: string;
  line?: number;
}

export interface ParseResult {
  format: StatementFormat;
  statements: Statement[];
  warnings: StatementWarning[];
}
