/**
 * Reading a NACHA return file: the bank sends back entries it could not post, each an entry detail record
 * followed by a type 99 addenda carrying the return reason code (R01…) and the original entry's trace number.
 * Notifications of change (COR entries: type 98 addenda) ask for a correction but return no money; they are
 * listed apart, with their corrected data (read by nacha-changes.ts).
 * Pure: text in, returns out; a file that is not a NACHA file is a ReturnFileError naming the line.
 */
import { RECORD_LENGTH } from "./nacha.ts";

/** Return reason codes (NACHA Operating Rules, Appendix Four) and the reason a payout shows for each. */
export const RETURN_REASONS: Readonly<Record<string, string>> = {
  R01: "Insufficient funds",
  R02: "Account closed",
  R03: "No account or unable to locate account",
  R04: "Invalid account number structure",
  R05: "Unauthorized debit to consumer account",
  R06: "Returned at the originating bank's request",
  R07: "Authorization revoked by customer",
  R08: "Payment stopped",
  R09: "Uncollected funds",
  R10: "Customer advises not authorized",
  R11: "Customer advises entry not in accordance with the terms of the authorization",
  R12: "Account sold to another bank",
  R13: "Invalid ACH routing number",
  R14: "Representative payee deceased or unable to continue",
  R15: "Beneficiary or account holder deceased",
  R16: "Account frozen or entry returned per OFAC instruction",
  R17: "File record edit criteria",
  R18: "Improper effective entry date",
  R19: "Amount field error",
  R20: "Non-transaction account",
  R21: "Invalid company identification",
  R22: "Invalid individual ID number",
  R23: "Credit entry refused by receiver",
  R24: "Duplicate entry",
  R25: "Addenda error",
  R26: "Mandatory field error",
  R27: "Trace number error",
  R28: "Routing number check digit error",
  R29: "Corporate customer advises not authorized",
  R30: "Receiving bank not a participant in check truncation program",
  R31: "Permissible return entry",
  R32: "Receiving bank non-settlement",
  R33: "Return of XCK entry",
  R34: "Limited participation bank",
  R35: "Return of improper debit entry",
  R36: "Return of improper credit entry",
  R37: "Source document presented for payment",
  R38: "Stop payment on source document",
  R39: "Improper source document",
  R40: "Return of ENR entry by federal government agency",
  R41: "Invalid transaction code (ENR)",
  R42: "Routing number or check digit error (ENR)",
  R43: "Invalid account number (ENR)",
  R44: "Invalid individual ID number (ENR)",
  R45: "Invalid individual or company name (ENR)",
  R46: "Invalid representative payee indicator (ENR)",
  R47: "Duplicate enrollment",
  R50: "State law affecting RCK acceptance",
  R51: "Item related to RCK entry is ineligible or RCK entry is improper",
  R52: "Stop payment on item related to RCK entry",
  R53: "Item and RCK entry presented for payment",
  R61: "Misrouted return",
  R62: "Return of erroneous or reversing debit",
  R67: "Duplicate return",
  R68: "Untimely return",
  R69: "Field error(s)",
  R70: "Permissible return entry not accepted",
  R71: "Misrouted dishonored return",
  R72: "Untimely dishonored return",
  R73: "Timely original return",
  R74: "Corrected return",
  R75: "Return not a duplicate",
  R76: "No errors found",
  R77: "Non-acceptance of R62 dishonored return",
  R80: "IAT entry coding error",
  R81: "Non-participant in IAT program",
  R82: "Invalid foreign receiving bank identification",
  R83: "Foreign receiving bank unable to settle",
  R84: "Entry not processed by gateway",
  R85: "Incorrectly coded outbound international payment",
};

/**
 * Returns that say the destination itself cannot take money: paying into it again would only come back, so the
 * return also disables the participant's bank account until a new one is set (PUT bank-account). Each with why.
 * Returns about one entry (R01 funds, R17–R19 and R21–R27 formatting, R23 a refused credit, R24 a duplicate) or
 * about the return itself (R61–R77) leave the account usable.
 */
export const UNUSABLE_ACCOUNT_RETURNS: Readonly<Record<string, string>> = {
  R02: "the account is closed",
  R03: "the bank finds no such account",
  R04: "the account number is not one the bank uses",
  R12: "the bank sold the account to another bank: the routing number no longer reaches it",
  R13: "the routing number reaches no ACH bank",
  R14: "the representative payee died or can no longer act",
  R15: "the account holder died",
  R16: "the account is frozen (or OFAC blocked it)",
  R20: "the account cannot take transfers (a non-transaction account)",
  R28: "the routing number fails its check digit at the ACH operator",
};

/** Whether a return code says the account is unusable (UNUSABLE_ACCOUNT_RETURNS), and why. */
export function unusableAccountReason(code: string): string | undefined {
  return UNUSABLE_ACCOUNT_RETURNS[code];
}

export function returnReason(code: string): string {
  return `${code}: ${RETURN_REASONS[code] ?? "Returned by the receiving bank"}`;
}

export interface AchReturn {
  /** R01, R02, … */
  returnCode: string;
  /** The trace number of the entry the originator sent (15 digits). */
  originalTrace: string;
  amountCents: number;
  /** 1-based line of the returned entry. */
  line: number;
}

/** A notification of change (COR entry, type 98 addenda): positions 36–64 of the addenda are its corrected data. */
export interface AchNotice {
  changeCode: string;
  originalTrace: string;
  /** The 29-character corrected data field as the bank wrote it (read by nacha-changes.ts). */
  correctedData: string;
  line: number;
}

export class ReturnFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReturnFileError";
  }
}

const RETURN_CODE_RE = /^R[0-9]{2}$/;
const TRACE_RE = /^[0-9]{15}$/;

/** Splits into 94-character records: CRLF or LF lines, or one unbroken string of records; padding lines are dropped. */
function recordsOf(text: string): string[] {
  const lines = text.includes("\n") ? text.split(/\r?\n/) : (text.match(new RegExp(`.{1,${RECORD_LENGTH}}`, "g")) ?? []);
  const out: string[] = [];
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\s+$/, "");
    if (line === "") continue;
    if (line.length > RECORD_LENGTH) throw new ReturnFileError(`line ${i + 1} is ${line.length} characters; NACHA records are ${RECORD_LENGTH}`);
    out.push(line.padEnd(RECORD_LENGTH, " "));
  }
  return out;
}

export function parseReturnFile(text: string): { returns: AchReturn[]; notices: AchNotice[] } {
  const records = recordsOf(text);
  if (records.length === 0 || !records[0]?.startsWith("1")) throw new ReturnFileError("not a NACHA file: the first record is not a file header (type 1)");
  const returns: AchReturn[] = [];
  const notices: AchNotice[] = [];
  let entry: { amountCents: number; line: number } | undefined;
  for (const [i, rec] of records.entries()) {
    const type = rec[0];
    if (type === "6") {
      const amount = rec.slice(29, 39);
      if (!/^[0-9]{10}$/.test(amount)) throw new ReturnFileError(`line ${i + 1}: entry amount is not numeric`);
      entry = { amountCents: Number(amount), line: i + 1 };
    } else if (type === "7") {
      const addendaType = rec.slice(1, 3);
      if (addendaType !== "99" && addendaType !== "98") continue;
      if (entry === undefined) throw new ReturnFileError(`line ${i + 1}: addenda without an entry before it`);
      const code = rec.slice(3, 6);
      const originalTrace = rec.slice(6, 21);
      if (!TRACE_RE.test(originalTrace)) throw new ReturnFileError(`line ${i + 1}: original trace number is not 15 digits`);
      if (addendaType === "99") {
        if (!RETURN_CODE_RE.test(code)) throw new ReturnFileError(`line ${i + 1}: return reason code "${code}" is not R followed by two digits`);
        returns.push({ returnCode: code, originalTrace, amountCents: entry.amountCents, line: entry.line });
      } else {
        notices.push({ changeCode: code, originalTrace, correctedData: rec.slice(35, 64), line: entry.line });
      }
      entry = undefined;
    } else if (!["1", "5", "8", "9"].includes(type ?? "")) {
      throw new ReturnFileError(`line ${i + 1}: unknown record type "${type ?? ""}"`);
    }
  }
  return { returns, notices };
}
