/**
 * Inputs built to make a reader do work quadratic in their size, one or more per format: long runs that a
 * backtracking pattern rescans from every position, nesting that each closing tag walks again, continuation
 * records that each re-split the whole record. Each is about `bytes` long, has no character that JSON escapes
 * (so it fits an import request of the same size) and carries the options to read it with.
 */
import type { ParseOptions } from "../parse.ts";

export interface Pathological {
  name: string;
  text: string;
  opts: ParseOptions;
}

const CSV_MAPPING = { date: "Date", amount: "Amount", currency: "EUR" };

/** Frame of each input (headers, other records) left out of the repeated part, so the whole stays near `bytes`. */
const FRAME_BYTES = 256;

function fill(unit: string, bytes: number): string {
  return unit.repeat(Math.max(1, Math.floor((bytes - FRAME_BYTES) / unit.length)));
}

/** Pathological statements of about `bytes` each, every format at least once. */
export function pathologicalStatements(bytes: number): Pathological[] {
  const camt = (body: string) =>
    `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt><Ntry>${body}</Ntry></Stmt></BkToCstmrStmt></Document>`;
  const pairs = Math.floor((bytes - FRAME_BYTES) / 7);
  return [
    // A space run not followed by a digit: `\s+(?=\d)` retried from every space.
    { name: "csv amount of spaces", text: `Date,Amount\n2024-01-01,1${fill(" ", bytes)}#\n`, opts: { format: "csv", mapping: CSV_MAPPING } },
    // Slashes not at the end: `/\/+$/` retried from every slash.
    {
      name: "mt940 :86: of slashes",
      text: `:20:X\n:25:NL26VAYB8060476890\n:60F:C240101EUR1,00\n:61:2401010101C1,00NTRFREF\n:86:/EREF/${fill("/", bytes)}x\n:62F:C240101EUR2,00\n-\n`,
      opts: { format: "mt940" },
    },
    // Decimals then text ending in a line separator, which `.` does not match: `(\d+,\d*)…(.*)$` retried every split.
    {
      name: "mt940 :61: ending in a line separator",
      text: `:20:X\n:25:NL26VAYB8060476890\n:60F:C240101EUR1,00\n:61:2401010101C1,${fill("1", bytes / 2)}${fill("x", bytes / 2)}\u2028\n-\n`,
      opts: { format: "mt940" },
    },
    // Aggregates never closed, then closing tags of none of them: each closer searched the whole stack.
    { name: "ofx unclosed nesting", text: `OFXHEADER:100\n\n<OFX>${"<A>".repeat(pairs)}${"</B>".repeat(pairs)}</OFX>`, opts: { format: "ofx" } },
    // Deep nesting inside an entry: each closing tag joined the whole path.
    { name: "camt053 deep nesting", text: camt(`${"<a>".repeat(pairs)}${"</a>".repeat(pairs)}`), opts: { format: "camt053" } },
    // A long element name around many children: each child's closing tag joined the path, long name included.
    {
      name: "camt053 long element name",
      text: camt(`<${fill("L", bytes / 4)}>${fill("<a/>", bytes / 2)}</${fill("L", bytes / 4)}>`),
      opts: { format: "camt053" },
    },
    // A detail record whose text never begins (distributed availability over 99,999,999 days), continued by
    // thousands of 88 records on one line: each continuation re-split the record.
    {
      name: "bai2 endless continuation",
      text: `01,S,R,240101,0000,1,,,2/\n02,R,S,1,241231,,USD,/\n03,1,USD,010,0,,/\n16,108,100,D,99999999/${fill("88,1/", bytes)}\n49,0,2/\n98,0,1,1/\n99,0,1,1/\n`,
      opts: { format: "bai2" },
    },
    // An amount of a million digits: converting it to a bigint is quadratic.
    {
      name: "bai2 amount of a million digits",
      text: `01,S,R,240101,0000,1,,,2/\n02,R,S,1,241231,,USD,/\n03,1,USD,010,${fill("9", bytes)},,/\n49,0,2/\n`,
      opts: { format: "bai2" },
    },
  ];
}
