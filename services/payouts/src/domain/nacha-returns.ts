/**
 * Reading a NACHA return file: the bank sends back entries it could not post, each an entry detail record
 * followed by a type 99 addenda carrying the return reason code (R01…) and the original entry's trace number.
 * Notifications of change (type 98 addenda) ask for a correction but return no money; they are listed apart.
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
  R31: "Permissible return entry",
  R33: "Return of XCK entry",
  R34: "Limited participation bank",
  R37: "Source document presented for payment",
  R61: "Misrouted return",
  R67: "Duplicate return",
  R68: "Untimely return",
  R69: "Field error(s)",
  R70: "Permissible return entry not accepted",
  R80: "IAT entry coding error",
  R85: "Incorrectly coded outbound international payment",
};

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

export interface AchNotice {
  changeCode: string;
  originalTrace: string;
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
        notices.push({ changeCode: code, originalTrace, line: entry.line });
      }
      entry = undefined;
    } else if (!["1", "5", "8", "9"].includes(type ?? "")) {
      throw new ReturnFileError(`line ${i + 1}: unknown record type "${type ?? ""}"`);
    }
  }
  return { returns, notices };
}
