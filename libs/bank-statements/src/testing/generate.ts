/**
 * Synthetic statements of a given size, one per format, for memory and speed tests. Amounts are deterministic
 * (no randomness) so a run can check the exact line count and totals it gets back.
 */
import type { StatementFormat } from "../core/types.ts";
import type { CsvMappingInput } from "../csv/mapping.ts";

export interface Generated {
  text: string;
  /** Statement lines (transactions) in the text. */
  transactions: number;
  /** Physical lines of text. */
  lines: number;
  /** Sum of the signed amounts in minor units. */
  sumMinor: number;
  mapping?: CsvMappingInput;
}

const amountOf = (i: number): number => ((i * 7919) % 100_000) + 1;
const signOf = (i: number): number => (i % 3 === 0 ? 1 : -1);
const dec = (minor: number): string => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, "0")}`;
const decComma = (minor: number): string => dec(minor).replace(".", ",");
const day = (i: number): string => `2024-${String(1 + (i % 12)).padStart(2, "0")}-${String(1 + (i % 28)).padStart(2, "0")}`;
const compactDay = (i: number): string => day(i).replace(/-/g, "");

/** Repeat `entry` until the text reaches `bytes`, between a head and a tail built from the totals. */
function build(bytes: number, entry: (i: number) => string, wrap: (body: string, n: number, sum: number) => string): Generated {
  const parts: string[] = [];
  let size = 0;
  let sum = 0;
  let n = 0;
  while (size < bytes) {
    const e = entry(n);
    parts.push(e);
    size += e.length;
    sum += signOf(n) * amountOf(n);
    n++;
  }
  const text = wrap(parts.join(""), n, sum);
  return { text, transactions: n, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0), sumMinor: sum };
}

const OPENING_MINOR = 100_000_000_000;

function ofx(bytes: number): Generated {
  return build(
    bytes,
    (i) =>
      `<STMTTRN><TRNTYPE>${signOf(i) > 0 ? "CREDIT" : "DEBIT"}<DTPOSTED>${compactDay(i)}120000<TRNAMT>${signOf(i) > 0 ? "" : "-"}${dec(amountOf(i))}<FITID>F${i}<NAME>PAYEE ${i % 97}<MEMO>Invoice ${i}</STMTTRN>\n`,
    (body, _n, sum) =>
      `OFXHEADER:100\nDATA:OFXSGML\nVERSION:102\nCHARSET:1252\n\n<OFX><BANKMSGSRSV1><STMTTRNRS><TRNUID>1<STMTRS><CURDEF>USD<BANKACCTFROM><BANKID>1<ACCTID>12345<ACCTTYPE>CHECKING</BANKACCTFROM><BANKTRANLIST><DTSTART>20240101<DTEND>20241231\n${body}</BANKTRANLIST><LEDGERBAL><BALAMT>${dec(OPENING_MINOR + sum)}<DTASOF>20241231</LEDGERBAL></STMTRS></STMTTRNRS></BANKMSGSRSV1></OFX>\n`,
  );
}

/** An element per line, indented four spaces a level, as banks write camt.053 (and as the fixtures are). */
function indented(depth: number, lines: [number, string][]): string {
  return lines.map(([level, text]) => `${" ".repeat(4 * (depth + level))}${text}\n`).join("");
}

function camt(bytes: number): Generated {
  return build(
    bytes,
    (i) =>
      indented(3, [
        [0, "<Ntry>"],
        [1, `<Amt Ccy="EUR">${dec(amountOf(i))}</Amt>`],
        [1, `<CdtDbtInd>${signOf(i) > 0 ? "CRDT" : "DBIT"}</CdtDbtInd>`],
        [1, "<Sts>BOOK</Sts>"],
        [1, "<BookgDt>"],
        [2, `<Dt>${day(i)}</Dt>`],
        [1, "</BookgDt>"],
        [1, "<ValDt>"],
        [2, `<Dt>${day(i)}</Dt>`],
        [1, "</ValDt>"],
        [1, `<AcctSvcrRef>B${i}</AcctSvcrRef>`],
        [1, "<NtryDtls>"],
        [2, "<TxDtls>"],
        [3, "<Refs>"],
        [4, `<EndToEndId>E2E${i}</EndToEndId>`],
        [3, "</Refs>"],
        [3, "<RmtInf>"],
        [4, `<Ustrd>Invoice ${i}</Ustrd>`],
        [3, "</RmtInf>"],
        [2, "</TxDtls>"],
        [1, "</NtryDtls>"],
        [0, "</Ntry>"],
      ]),
    (body, _n, sum) =>
      `<?xml version="1.0" encoding="UTF-8"?>\n<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><GrpHdr><MsgId>M1</MsgId></GrpHdr><Stmt><Id>S1</Id><Acct><Id><IBAN>NL26VAYB8060476890</IBAN></Id><Ccy>EUR</Ccy></Acct>\n` +
      `<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">${dec(OPENING_MINOR)}</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2024-01-01</Dt></Dt></Bal>\n` +
      `<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">${dec(OPENING_MINOR + sum)}</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2024-12-31</Dt></Dt></Bal>\n${body}</Stmt></BkToCstmrStmt></Document>\n`,
  );
}

function bai2(bytes: number): Generated {
  return build(
    bytes,
    (i) => `16,${signOf(i) > 0 ? "108" : "409"},${amountOf(i)},0,B${i},C${i},INVOICE ${i}/\n`,
    (body, n, sum) => {
      // BAI2 control totals add every amount of the account: both balances and each detail's magnitude.
      let magnitudes = 0;
      for (let i = 0; i < n; i++) magnitudes += amountOf(i);
      const total = OPENING_MINOR + (OPENING_MINOR + sum) + magnitudes;
      return `01,SENDER,RECEIVER,240101,0000,1,,,2/\n02,RECEIVER,SENDER,1,241231,,USD,/\n03,12345,USD,010,${OPENING_MINOR},,,015,${OPENING_MINOR + sum},,/\n${body}49,${total},${n + 2}/\n98,${total},1,${n + 4}/\n99,${total},1,${n + 6}/\n`;
    },
  );
}

function mt940(bytes: number): Generated {
  return build(
    bytes,
    (i) => `:61:${compactDay(i).slice(2)}${signOf(i) > 0 ? "C" : "D"}${decComma(amountOf(i))}NTRFREF${i}//B${i}\n:86:Invoice ${i} payee ${i % 97}\n`,
    (body, _n, sum) =>
      `:20:GEN\n:25:NL26VAYB8060476890\n:28C:1/1\n:60F:C240101EUR${decComma(OPENING_MINOR)}\n${body}:62F:C241231EUR${decComma(OPENING_MINOR + sum)}\n-\n`,
  );
}

function csv(bytes: number): Generated {
  const g = build(
    bytes,
    (i) => `${day(i)},"Invoice ${i}, payee ${i % 97}",R${i},${signOf(i) > 0 ? "" : "-"}${dec(amountOf(i))}\n`,
    (body) => `Date,Description,Reference,Amount\n${body}`,
  );
  return { ...g, mapping: { date: "Date", amount: "Amount", description: "Description", reference: "Reference", currency: "EUR" } };
}

export function generateStatement(format: Exclude<StatementFormat, "qfx">, bytes: number): Generated {
  switch (format) {
    case "ofx":
      return ofx(bytes);
    case "camt053":
      return camt(bytes);
    case "bai2":
      return bai2(bytes);
    case "mt940":
      return mt940(bytes);
    case "csv":
      return csv(bytes);
  }
}
