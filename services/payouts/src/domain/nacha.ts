/**
 * NACHA ACH file writer for payouts: one PPD batch of credits (checking 22, savings 32) with an optional
 * payment-related addenda (type 05) per entry, the batch and file control records, and block padding with
 * records of nines to a multiple of ten records. Fixed-width 94-character records in uppercase ASCII, joined by
 * LF. Pure: the creation time, file id modifier and trace sequences come in as arguments.
 *
 * Record layouts follow the NACHA Operating Rules (Appendix Three). Amounts are integer cents throughout; the
 * 10-digit amount field caps an entry at 9,999,999,999 cents and the 12-digit totals cap a file at
 * 999,999,999,999 cents, and both are checked here rather than truncated.
 */
import { schemas } from "@treasury/contracts";

const { isAbaRoutingNumber } = schemas;

export const RECORD_LENGTH = 94;
export const BLOCKING_FACTOR = 10;
export const ENTRY_AMOUNT_MAX_CENTS = 9_999_999_999;
export const FILE_TOTAL_MAX_CENTS = 999_999_999_999;
/** Entries in one file: the 6-digit batch entry/addenda count holds two records per entry with room to spare. */
export const FILE_ENTRIES_MAX = 100_000;
/** Characters the file carries in text fields; anything else becomes a space. */
const TEXT_RE = /[^A-Z0-9 .,&'\-/()#*+]/g;

export interface NachaOrigin {
  /** Routing number (9 digits) of the bank or ACH operator receiving the file. */
  immediateDestination: string;
  immediateDestinationName: string;
  /** 10 characters: usually "1" + the company's EIN, or a space + the ODFI routing number. */
  immediateOrigin: string;
  immediateOriginName: string;
  companyName: string;
  /** 10 characters: the originator's company identification the ODFI assigned (often "1" + EIN). */
  companyId: string;
  /** Routing number (9 digits) of the originating bank; its first 8 digits prefix every trace number. */
  odfiRouting: string;
  /** Shown on the receiver's statement (10 characters), e.g. "PAYOUT". */
  entryDescription: string;
}

export interface NachaCredit {
  /** 1–9,999,999: the trace number is the ODFI's 8 digits followed by this, zero-padded to 7. */
  traceSequence: number;
  routingNumber: string;
  accountNumber: string;
  accountType: "checking" | "savings";
  amountCents: number;
  /** The receiver's identification at the originator (15 characters), e.g. the payout's short id. */
  individualId: string;
  individualName: string;
  /** Payment-related information for a type 05 addenda (80 characters at most); none when absent. */
  addenda?: string | undefined;
}

export interface NachaFileInput {
  origin: NachaOrigin;
  creation: Date;
  /** A–Z or 0–9: distinguishes files created on the same day for the same destination. */
  fileIdModifier: string;
  /** YYYY-MM-DD: the day the receivers' banks post the credits. */
  effectiveDate: string;
  credits: readonly NachaCredit[];
}

export interface NachaTotals {
  batchCount: number;
  blockCount: number;
  /** Entry detail plus addenda records. */
  entryAddendaCount: number;
  entryHash: string;
  totalDebitCents: number;
  totalCreditCents: number;
  /** Trace numbers in file order, one per credit. */
  traceNumbers: string[];
}

export class NachaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NachaError";
  }
}

function alpha(value: string, width: number): string {
  const clean = value
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toUpperCase()
    .replace(TEXT_RE, " ");
  return clean.slice(0, width).padEnd(width, " ");
}

function numeric(value: number | string, width: number): string {
  const text = String(value);
  if (!/^[0-9]+$/.test(text) || text.length > width) throw new NachaError(`numeric field of width ${width} cannot hold ${text}`);
  return text.padStart(width, "0");
}

/** Left-justified, space-filled, characters kept as given (account numbers). */
function field(value: string, width: number): string {
  if (value.length > width) throw new NachaError(`field of width ${width} cannot hold ${value.length} characters`);
  return value.padEnd(width, " ");
}

function yymmdd(isoDate: string): string {
  const m = /^\d{2}(\d{2})-(\d{2})-(\d{2})$/.exec(isoDate);
  if (m === null) throw new NachaError(`not a YYYY-MM-DD date: ${isoDate}`);
  return `${m[1]}${m[2]}${m[3]}`;
}

function record(text: string): string {
  if (text.length !== RECORD_LENGTH) throw new Error(`NACHA record is ${text.length} characters, not ${RECORD_LENGTH}: ${text}`);
  return text;
}

function checkOrigin(o: NachaOrigin): void {
  if (!isAbaRoutingNumber(o.immediateDestination)) throw new NachaError("immediate destination must be a valid 9-digit routing number");
  if (!isAbaRoutingNumber(o.odfiRouting)) throw new NachaError("ODFI routing number must be a valid 9-digit routing number");
  if (o.immediateOrigin.length !== 10) throw new NachaError("immediate origin must be 10 characters");
  if (o.companyId.length !== 10) throw new NachaError("company identification must be 10 characters");
}

function checkCredit(c: NachaCredit): void {
  if (!isAbaRoutingNumber(c.routingNumber)) throw new NachaError(`routing number ${c.routingNumber} fails the ABA checksum`);
  if (!/^[0-9A-Za-z-]{1,17}$/.test(c.accountNumber)) throw new NachaError("account number must be 1–17 characters");
  if (!Number.isSafeInteger(c.amountCents) || c.amountCents <= 0 || c.amountCents > ENTRY_AMOUNT_MAX_CENTS) {
    throw new NachaError(`entry amount must be 1–${ENTRY_AMOUNT_MAX_CENTS} cents`);
  }
  if (!Number.isSafeInteger(c.traceSequence) || c.traceSequence < 1 || c.traceSequence > 9_999_999) throw new NachaError("trace sequence must be 1–9999999");
}

export function traceNumberOf(odfiRouting: string, sequence: number): string {
  return `${odfiRouting.slice(0, 8)}${numeric(sequence, 7)}`;
}

function fileHeader(input: NachaFileInput): string {
  const o = input.origin;
  const d = input.creation;
  const date = `${String(d.getUTCFullYear() % 100).padStart(2, "0")}${String(d.getUTCMonth() + 1).padStart(2, "0")}${String(d.getUTCDate()).padStart(2, "0")}`;
  const time = `${String(d.getUTCHours()).padStart(2, "0")}${String(d.getUTCMinutes()).padStart(2, "0")}`;
  if (!/^[A-Z0-9]$/.test(input.fileIdModifier)) throw new NachaError("file id modifier must be A–Z or 0–9");
  return record(
    `101 ${o.immediateDestination}${field(o.immediateOrigin, 10)}${date}${time}${input.fileIdModifier}094101` +
      `${alpha(o.immediateDestinationName, 23)}${alpha(o.immediateOriginName, 23)}${" ".repeat(8)}`,
  );
}

function batchHeader(input: NachaFileInput, batchNumber: number): string {
  const o = input.origin;
  // Service class 220: credits only. Settlement date (positions 76–78) is left blank for the ACH operator.
  return record(
    `5220${alpha(o.companyName, 16)}${" ".repeat(20)}${field(o.companyId, 10)}PPD${alpha(o.entryDescription, 10)}` +
      `${" ".repeat(6)}${yymmdd(input.effectiveDate)}   1${o.odfiRouting.slice(0, 8)}${numeric(batchNumber, 7)}`,
  );
}

function entryDetail(c: NachaCredit, trace: string): string {
  const code = c.accountType === "checking" ? "22" : "32";
  return record(
    `6${code}${c.routingNumber.slice(0, 8)}${c.routingNumber.slice(8)}${field(c.accountNumber, 17)}${numeric(c.amountCents, 10)}` +
      `${alpha(c.individualId, 15)}${alpha(c.individualName, 22)}  ${c.addenda !== undefined ? "1" : "0"}${trace}`,
  );
}

function addendaRecord(text: string, trace: string): string {
  return record(`705${alpha(text, 80)}0001${trace.slice(8)}`);
}

/** Sum of the 8-digit receiving DFI ids, its rightmost ten digits. */
export function entryHashOf(routingNumbers: readonly string[]): string {
  let sum = 0n;
  for (const r of routingNumbers) sum += BigInt(r.slice(0, 8));
  return numeric(String(sum % 10_000_000_000n), 10);
}

/** Renders the file; throws NachaError for input a bank would reject. */
export function renderNachaFile(input: NachaFileInput): { text: string; totals: NachaTotals } {
  checkOrigin(input.origin);
  if (input.credits.length === 0) throw new NachaError("a file needs at least one entry");
  if (input.credits.length > FILE_ENTRIES_MAX) throw new NachaError(`a file holds at most ${FILE_ENTRIES_MAX} entries`);
  const records = [fileHeader(input), batchHeader(input, 1)];
  let totalCredit = 0;
  let entryAddenda = 0;
  const traces: string[] = [];
  for (const c of input.credits) {
    checkCredit(c);
    const trace = traceNumberOf(input.origin.odfiRouting, c.traceSequence);
    traces.push(trace);
    records.push(entryDetail(c, trace));
    entryAddenda++;
    if (c.addenda !== undefined) {
      records.push(addendaRecord(c.addenda, trace));
      entryAddenda++;
    }
    totalCredit += c.amountCents;
  }
  if (totalCredit > FILE_TOTAL_MAX_CENTS) throw new NachaError(`a file's credits total at most ${FILE_TOTAL_MAX_CENTS} cents`);
  const hash = entryHashOf(input.credits.map((c) => c.routingNumber));
  const o = input.origin;
  records.push(
    record(
      `8220${numeric(entryAddenda, 6)}${hash}${numeric(0, 12)}${numeric(totalCredit, 12)}${field(o.companyId, 10)}` +
        `${" ".repeat(19)}${" ".repeat(6)}${o.odfiRouting.slice(0, 8)}${numeric(1, 7)}`,
    ),
  );
  const withControl = records.length + 1;
  const blockCount = Math.ceil(withControl / BLOCKING_FACTOR);
  records.push(
    record(`9${numeric(1, 6)}${numeric(blockCount, 6)}${numeric(entryAddenda, 8)}${hash}${numeric(0, 12)}${numeric(totalCredit, 12)}${" ".repeat(39)}`),
  );
  while (records.length % BLOCKING_FACTOR !== 0) records.push("9".repeat(RECORD_LENGTH));
  return {
    text: `${records.join("\n")}\n`,
    totals: {
      batchCount: 1,
      blockCount,
      entryAddendaCount: entryAddenda,
      entryHash: hash,
      totalDebitCents: 0,
      totalCreditCents: totalCredit,
      traceNumbers: traces,
    },
  };
}

/** The next banking day after `date` (weekends skipped; holidays are the bank's to roll). */
export function nextBankingDay(date: Date): string {
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1));
  while (d.getUTCDay() === 0 || d.getUTCDay() === 6) d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}
