/**
 * What a notification of change asks to correct (NACHA Operating Rules, Appendix Five). The corrected data
 * field is positions 36–64 of the type 98 addenda (29 characters); each change code lays it out its own way:
 *   C01 account number          1–17 account number, left-justified
 *   C02 routing number          1–9 routing number with its check digit
 *   C03 routing and account     1–9 routing number, 10–12 blank, 13–29 account number
 *   C05 transaction code        1–2 transaction code (the account type)
 *   C06 account and code        1–17 account number, 18–20 blank, 21–22 transaction code
 *   C07 routing, account, code  1–9 routing number, 10–26 account number, 27–28 transaction code
 * Other codes correct nothing a bank account holds here (C04 the receiver's name, C09 an individual id, C10–C12
 * the originator's own company name and id, C13 an addenda format notice, C08 and C14 international entries):
 * they are listed as not applied. A field that does not read as NACHA lays it out is not applied either: a
 * correction is never guessed. Pure.
 */
import { schemas } from "@treasury/contracts";

export interface BankCorrection {
  routing_number?: string;
  account_number?: string;
  account_type?: "checking" | "savings";
}

export type CorrectionReading = { ok: true; correction: BankCorrection } | { ok: false; reason: string };

/** Change codes and what each corrects, for the answers. */
export const CHANGE_CODES: Readonly<Record<string, string>> = {
  C01: "Incorrect account number",
  C02: "Incorrect routing number",
  C03: "Incorrect routing number and account number",
  C04: "Incorrect individual name",
  C05: "Incorrect transaction code",
  C06: "Incorrect account number and transaction code",
  C07: "Incorrect routing number, account number and transaction code",
  C08: "Incorrect receiving bank identification (international)",
  C09: "Incorrect individual identification number",
  C10: "Incorrect company name",
  C11: "Incorrect company identification",
  C12: "Incorrect company name and company identification",
  C13: "Addenda format error",
  C14: "Incorrect SEC code for outbound international payment",
};

/** The codes whose correction lands on a participant's bank account. */
const APPLIED = new Set(["C01", "C02", "C03", "C05", "C06", "C07"]);

const ACCOUNT_RE = /^[0-9]{4,17}$/;

type Field<T> = { ok: true; value: T } | { ok: false; reason: string };

function routingAt(data: string, from: number): Field<string> {
  const v = data.slice(from, from + 9);
  if (!schemas.isAbaRoutingNumber(v)) return { ok: false, reason: `corrected routing number "${v.trim()}" is not a valid ABA routing number` };
  return { ok: true, value: v };
}

/** An account number field, left-justified and space-filled; 4–17 digits as bank accounts here hold them. */
function accountAt(data: string, from: number, length: number): Field<string> {
  const raw = data.slice(from, from + length);
  const v = raw.trimEnd();
  if (raw.startsWith(" ") || !ACCOUNT_RE.test(v)) return { ok: false, reason: "corrected account number is not 4–17 digits, left-justified" };
  return { ok: true, value: v };
}

/**
 * A credit's transaction code names the account type: 2x checking, 3x savings, with x one of NACHA's live,
 * prenotification or zero-dollar codes (2, 3, 4 credits; 7, 8, 9 debits). Loan and ledger codes are not an
 * account a payout goes to.
 */
function accountTypeAt(data: string, from: number): Field<"checking" | "savings"> {
  const v = data.slice(from, from + 2);
  const m = /^([23])([234789])$/.exec(v);
  if (m === null) return { ok: false, reason: `corrected transaction code "${v.trim()}" names no checking or savings account` };
  return { ok: true, value: m[1] === "2" ? "checking" : "savings" };
}

function blank(data: string, from: number, to: number): boolean {
  return data.slice(from, to).trim() === "";
}

/** Reads the corrected data of one notice; `data` is the 29-character field (shorter is padded with spaces). */
export function readCorrection(changeCode: string, data: string): CorrectionReading {
  if (!/^C[0-9]{2}$/.test(changeCode)) return { ok: false, reason: `"${changeCode}" is not a change code` };
  const known = CHANGE_CODES[changeCode];
  if (known === undefined) return { ok: false, reason: `${changeCode} is not a change code NACHA defines` };
  if (!APPLIED.has(changeCode)) return { ok: false, reason: `${changeCode} (${known}) corrects nothing a bank account holds` };
  const d = data.padEnd(29, " ");
  const fields: Array<[keyof BankCorrection, Field<string>]> = [];
  if (changeCode === "C01") fields.push(["account_number", accountAt(d, 0, 17)]);
  if (changeCode === "C02") fields.push(["routing_number", routingAt(d, 0)]);
  if (changeCode === "C03") {
    if (!blank(d, 9, 12)) return { ok: false, reason: "C03 corrected data has no blanks in positions 10–12" };
    fields.push(["routing_number", routingAt(d, 0)], ["account_number", accountAt(d, 12, 17)]);
  }
  if (changeCode === "C05") fields.push(["account_type", accountTypeAt(d, 0)]);
  if (changeCode === "C06") {
    if (!blank(d, 17, 20)) return { ok: false, reason: "C06 corrected data has no blanks in positions 18–20" };
    fields.push(["account_number", accountAt(d, 0, 17)], ["account_type", accountTypeAt(d, 20)]);
  }
  if (changeCode === "C07") fields.push(["routing_number", routingAt(d, 0)], ["account_number", accountAt(d, 9, 17)], ["account_type", accountTypeAt(d, 26)]);
  const correction: Record<string, string> = {};
  for (const [name, f] of fields) {
    if (!f.ok) return { ok: false, reason: `${changeCode}: ${f.reason}` };
    correction[name] = f.value;
  }
  return { ok: true, correction: correction as BankCorrection };
}
