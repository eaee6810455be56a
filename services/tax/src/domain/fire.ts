/**
 * The IRS FIRE e-file format (Publication 1220): fixed-width records of 750 bytes, T (transmitter), A (payer),
 * B (payee), C (end of payer), K (state totals of the Combined Federal/State Filing Program), F (end of
 * transmission). No maintained npm package writes it (docs/adr/0020-fire-writer-and-form-rule.md), so this is the
 * writer: pure functions from values to records, and a generator that streams a file from documents in any number
 * without holding them (the caller counts them first: the T record carries the payee total).
 *
 * Positions below are 1-based as the publication prints them. Amounts are cents, right-justified and zero-filled;
 * text is upper-case ASCII, left-justified and blank-filled; positions 749–750 are CR LF.
 */
import type { schemas } from "@treasury/contracts";

export const FIRE_RECORD_BYTES = 750;
/** The amount codes a payee record may carry, in field order (Payment Amount 1 … J). */
export const AMOUNT_CODES = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F", "G", "H", "J"] as const;
/** Form 1099-K: 1 gross (box 1a), 5–9 and A–G January to December (boxes 5a–5l). 1099-NEC: 1 (box 1). */
const FORM_CODES: Record<schemas.TaxForm, { typeOfReturn: string; amountCodes: string[] }> = {
  "1099-K": { typeOfReturn: "MC", amountCodes: ["1", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F", "G"] },
  "1099-NEC": { typeOfReturn: "NE", amountCodes: ["1"] },
};

/**
 * States of the Combined Federal/State Filing Program and their codes (Publication 1220, Part A): the IRS forwards
 * a payee's record to its state, and the file carries a K record of totals per state.
 */
export const CFSF_STATE_CODES: Readonly<Record<string, string>> = {
  AL: "01",
  AZ: "04",
  AR: "05",
  CA: "06",
  CO: "07",
  CT: "08",
  DE: "10",
  DC: "11",
  GA: "13",
  HI: "15",
  ID: "16",
  IN: "18",
  IA: "19",
  KS: "20",
  KY: "21",
  LA: "22",
  ME: "23",
  MD: "24",
  MA: "25",
  MI: "26",
  MN: "27",
  MS: "28",
  MO: "29",
  MT: "30",
  NE: "31",
  NJ: "34",
  NM: "35",
  NC: "37",
  ND: "38",
  OH: "39",
  OK: "40",
  OR: "41",
  RI: "44",
  SC: "45",
  VT: "50",
  VA: "51",
  WI: "55",
};

export interface FireParty {
  tin: string;
  name: string;
  address: string;
  city: string;
  state: string;
  zip: string;
  phone: string;
}

export interface FireTransmitter extends FireParty {
  tcc: string;
  contactName: string;
  contactEmail: string;
}

export interface FirePayee {
  form: schemas.TaxForm;
  tinType: schemas.TinType | null;
  tin: string | null;
  name: string;
  address: string;
  city: string;
  state: string;
  zip: string;
  accountNumber: string;
  /** Amounts by code (cents); codes the form does not use are zero. */
  amounts: Partial<Record<(typeof AMOUNT_CODES)[number], number>>;
  transactionCount: number;
  corrected: boolean;
}

export interface FireFile {
  taxYear: number;
  /** A test file (sandbox): the IRS's test system takes it, production refuses it. */
  test: boolean;
  transmitter: FireTransmitter;
  payer: FireParty;
  /** The payees, grouped by form (each form is one A … C block). */
  payeeCount: number;
}

class Record750 {
  private readonly chars = Array.from({ length: FIRE_RECORD_BYTES - 2 }, () => " ");
  text(start: number, len: number, value: string): this {
    const clean = value
      .normalize("NFKD")
      .replace(/[^\x20-\x7e]/g, "")
      .toUpperCase()
      .slice(0, len)
      .padEnd(len, " ");
    for (let i = 0; i < len; i++) this.chars[start - 1 + i] = clean[i] ?? " ";
    return this;
  }
  num(start: number, len: number, value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`FIRE field at ${start}: ${value} is not a non-negative integer`);
    const s = String(value);
    if (s.length > len) throw new Error(`FIRE field at ${start}: ${value} does not fit ${len} digits`);
    return this.text(start, len, s.padStart(len, "0"));
  }
  digits(start: number, len: number, value: string): this {
    return this.text(start, len, value.replace(/\D/g, ""));
  }
  toString(): string {
    return `${this.chars.join("")}\r\n`;
  }
}

export function tRecord(f: FireFile, seq: number): string {
  const t = f.transmitter;
  return new Record750()
    .text(1, 1, "T")
    .num(2, 4, f.taxYear)
    .digits(7, 9, t.tin)
    .text(16, 5, t.tcc)
    .text(28, 1, f.test ? "T" : "")
    .text(30, 40, t.name)
    .text(110, 40, t.name)
    .text(190, 40, t.address)
    .text(230, 40, t.city)
    .text(270, 2, t.state)
    .digits(272, 9, t.zip)
    .num(296, 8, f.payeeCount)
    .text(304, 40, t.contactName)
    .digits(344, 15, t.phone)
    .text(359, 50, t.contactEmail)
    .num(500, 8, seq)
    .text(518, 1, "I")
    .toString();
}

export function aRecord(f: FireFile, form: schemas.TaxForm, combinedFederalState: boolean, seq: number): string {
  const p = f.payer;
  return new Record750()
    .text(1, 1, "A")
    .num(2, 4, f.taxYear)
    .text(6, 1, combinedFederalState ? "1" : "")
    .digits(12, 9, p.tin)
    .text(26, 2, FORM_CODES[form].typeOfReturn)
    .text(28, 18, FORM_CODES[form].amountCodes.join(""))
    .text(53, 40, p.name)
    .text(133, 1, "0")
    .text(134, 40, p.address)
    .text(174, 40, p.city)
    .text(214, 2, p.state)
    .digits(216, 9, p.zip)
    .digits(225, 15, p.phone)
    .num(500, 8, seq)
    .toString();
}

function amountsAt(r: Record750, start: number, width: number, amounts: FirePayee["amounts"]): Record750 {
  AMOUNT_CODES.forEach((code, i) => r.num(start + i * width, width, amounts[code] ?? 0));
  return r;
}

export function bRecord(f: FireFile, p: FirePayee, seq: number): string {
  const r = new Record750()
    .text(1, 1, "B")
    .num(2, 4, f.taxYear)
    .text(6, 1, p.corrected ? "G" : "")
    .text(11, 1, p.tinType === null ? "" : p.tinType === "ein" ? "1" : "2")
    .text(12, 9, p.tin ?? "")
    .text(21, 20, p.accountNumber);
  amountsAt(r, 55, 12, p.amounts)
    .text(288, 40, p.name)
    .text(368, 40, p.address)
    .text(448, 40, p.city)
    .text(488, 2, p.state)
    .digits(490, 9, p.zip)
    .num(500, 8, seq);
  if (p.form === "1099-K") {
    // The platform settles its sellers' sales as a third party settlement organisation: a payment settlement entity
    // (filer type 1) reporting third party network transactions (payment type 2).
    r.text(547, 1, "1").text(548, 1, "2").num(549, 13, p.transactionCount).text(565, 40, f.payer.name);
  }
  return r.text(747, 2, CFSF_STATE_CODES[p.state] ?? "").toString();
}

/** C (end of payer) and K (a state's totals) carry the same totals: payees and each amount code's sum. */
export function totalsRecord(type: "C" | "K", payees: number, totals: FirePayee["amounts"], seq: number, stateCode = ""): string {
  const r = new Record750().text(1, 1, type).num(2, 8, payees);
  amountsAt(r, 16, 18, totals).num(500, 8, seq);
  if (type === "K") r.text(747, 2, stateCode);
  return r.toString();
}

export function fRecord(aRecords: number, payees: number, seq: number): string {
  return new Record750().text(1, 1, "F").num(2, 8, aRecords).num(10, 21, 0).num(50, 8, payees).num(500, 8, seq).toString();
}

function add(into: FirePayee["amounts"], from: FirePayee["amounts"]): void {
  for (const code of AMOUNT_CODES) {
    const v = from[code];
    if (v !== undefined) into[code] = (into[code] ?? 0) + v;
  }
}

/**
 * The whole file, record by record: T, then per form A, its B records, C and the K records of its states, then F.
 * Payees must come grouped by form. Memory holds one block's per-state totals, never the payees.
 */
export async function* fireRecords(f: FireFile, payees: AsyncIterable<FirePayee>): AsyncGenerator<string> {
  let seq = 1;
  yield tRecord(f, seq++);
  let aCount = 0;
  let written = 0;
  let block:
    | { form: schemas.TaxForm; count: number; totals: FirePayee["amounts"]; states: Map<string, { count: number; totals: FirePayee["amounts"] }> }
    | undefined;
  function* close(): Generator<string> {
    if (block === undefined) return;
    yield totalsRecord("C", block.count, block.totals, seq++);
    for (const [state, s] of [...block.states].sort(([a], [b]) => a.localeCompare(b))) {
      yield totalsRecord("K", s.count, s.totals, seq++, CFSF_STATE_CODES[state] ?? "");
    }
  }
  for await (const p of payees) {
    if (block === undefined || block.form !== p.form) {
      yield* close();
      block = { form: p.form, count: 0, totals: {}, states: new Map() };
      aCount += 1;
      // Every block joins the Combined Federal/State program: states outside it simply get no K record.
      yield aRecord(f, p.form, true, seq++);
    }
    yield bRecord(f, p, seq++);
    block.count += 1;
    written += 1;
    add(block.totals, p.amounts);
    if (CFSF_STATE_CODES[p.state] !== undefined) {
      const s = block.states.get(p.state) ?? { count: 0, totals: {} };
      s.count += 1;
      add(s.totals, p.amounts);
      block.states.set(p.state, s);
    }
  }
  yield* close();
  if (written !== f.payeeCount) throw new Error(`FIRE file announced ${f.payeeCount} payees and wrote ${written}`);
  yield fRecord(aCount, written, seq++);
}

/** A document's amounts by FIRE amount code. */
export function fireAmounts(form: schemas.TaxForm, reportedCents: number, monthlyCents: readonly number[]): FirePayee["amounts"] {
  if (form === "1099-NEC") return { "1": reportedCents };
  const months = ["5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F", "G"] as const;
  const out: FirePayee["amounts"] = { "1": reportedCents };
  months.forEach((code, i) => (out[code] = monthlyCents[i] ?? 0));
  return out;
}
