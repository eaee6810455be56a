/**
 * An independent NACHA reader for tests: it shares no code with the writer (src/domain/nacha.ts). It slices
 * every record by the positions of the NACHA Operating Rules, checks the file's structure (record lengths,
 * record order, blocking to ten records, nines padding), recomputes every control total (entry/addenda counts,
 * entry hashes, debit and credit totals, batch and block counts) and compares them with the control records,
 * and checks each routing number's check digit and each addenda's link to its entry.
 */

export interface ReadEntry {
  transactionCode: string;
  receivingDfi: string;
  checkDigit: string;
  accountNumber: string;
  amountCents: number;
  individualId: string;
  individualName: string;
  addendaIndicator: string;
  traceNumber: string;
  addenda: Array<{ typeCode: string; info: string; sequence: string; entrySequence: string }>;
}

export interface ReadBatch {
  serviceClass: string;
  companyName: string;
  companyId: string;
  secCode: string;
  entryDescription: string;
  effectiveDate: string;
  odfi: string;
  batchNumber: number;
  entries: ReadEntry[];
  control: { entryAddendaCount: number; entryHash: string; totalDebit: number; totalCredit: number };
}

export interface ReadFile {
  immediateDestination: string;
  immediateOrigin: string;
  creationDate: string;
  creationTime: string;
  fileIdModifier: string;
  batches: ReadBatch[];
  control: { batchCount: number; blockCount: number; entryAddendaCount: number; entryHash: string; totalDebit: number; totalCredit: number };
  recordCount: number;
}

const at = (line: string, from: number, to: number): string => line.substring(from - 1, to);
const num = (line: string, from: number, to: number, what: string): number => {
  const s = at(line, from, to);
  if (!/^[0-9]+$/.test(s)) throw new Error(`${what} (positions ${from}-${to}) is not numeric: "${s}"`);
  return Number(s);
};

export function abaCheckDigitOk(nine: string): boolean {
  if (!/^[0-9]{9}$/.test(nine)) return false;
  const d = [...nine].map(Number);
  const sum = 3 * ((d[0] ?? 0) + (d[3] ?? 0) + (d[6] ?? 0)) + 7 * ((d[1] ?? 0) + (d[4] ?? 0) + (d[7] ?? 0)) + ((d[2] ?? 0) + (d[5] ?? 0) + (d[8] ?? 0));
  return sum % 10 === 0;
}

function hashOf(dfis: string[]): string {
  const total = dfis.reduce((s, d) => s + BigInt(d), 0n);
  return (total % 10_000_000_000n).toString().padStart(10, "0");
}

/** Reads and checks a NACHA file; throws naming the first rule it breaks. */
export function readNachaFile(text: string): ReadFile {
  const lines = text.replace(/\n$/, "").split("\n");
  lines.forEach((l, i) => {
    if (l.length !== 94) throw new Error(`record ${i + 1} is ${l.length} characters, not 94`);
  });
  if (lines.length % 10 !== 0) throw new Error(`${lines.length} records is not a whole number of 10-record blocks`);
  const head = lines[0] ?? "";
  if (at(head, 1, 3) !== "101") throw new Error("first record is not a file header with priority 01");
  if (at(head, 35, 40) !== "094101") throw new Error("record size, blocking factor or format code is wrong");
  const dest = at(head, 4, 13);
  if (dest[0] !== " " || !abaCheckDigitOk(dest.slice(1))) throw new Error(`immediate destination "${dest}" is not a space and a valid routing number`);
  const file: ReadFile = {
    immediateDestination: dest.slice(1),
    immediateOrigin: at(head, 14, 23),
    creationDate: at(head, 24, 29),
    creationTime: at(head, 30, 33),
    fileIdModifier: at(head, 34, 34),
    batches: [],
    control: { batchCount: 0, blockCount: 0, entryAddendaCount: 0, entryHash: "", totalDebit: 0, totalCredit: 0 },
    recordCount: lines.length,
  };
  let i = 1;
  let fileControl: string | undefined;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    if (line[0] === "5") {
      const { batch, next } = readBatch(lines, i);
      file.batches.push(batch);
      i = next;
    } else if (line[0] === "9" && fileControl === undefined) {
      fileControl = line;
      i++;
      for (; i < lines.length; i++) if (lines[i] !== "9".repeat(94)) throw new Error(`record ${i + 1} after the file control is not nines padding`);
    } else {
      throw new Error(`record ${i + 1}: unexpected record type "${line[0] ?? ""}"`);
    }
  }
  if (fileControl === undefined) throw new Error("no file control record");
  file.control = {
    batchCount: num(fileControl, 2, 7, "batch count"),
    blockCount: num(fileControl, 8, 13, "block count"),
    entryAddendaCount: num(fileControl, 14, 21, "entry/addenda count"),
    entryHash: at(fileControl, 22, 31),
    totalDebit: num(fileControl, 32, 43, "total debit"),
    totalCredit: num(fileControl, 44, 55, "total credit"),
  };
  const entries = file.batches.flatMap((b) => b.entries);
  const expect = (name: string, got: unknown, want: unknown) => {
    if (got !== want) throw new Error(`file control ${name} is ${String(got)}, the file holds ${String(want)}`);
  };
  expect("batch count", file.control.batchCount, file.batches.length);
  expect("block count", file.control.blockCount, lines.length / 10);
  expect("entry/addenda count", file.control.entryAddendaCount, entries.length + entries.reduce((s, e) => s + e.addenda.length, 0));
  expect("entry hash", file.control.entryHash, hashOf(entries.map((e) => e.receivingDfi)));
  expect(
    "total credit",
    file.control.totalCredit,
    file.batches.reduce((s, b) => s + b.control.totalCredit, 0),
  );
  expect(
    "total debit",
    file.control.totalDebit,
    file.batches.reduce((s, b) => s + b.control.totalDebit, 0),
  );
  return file;
}

function readBatch(lines: string[], start: number): { batch: ReadBatch; next: number } {
  const h = lines[start] ?? "";
  const batch: ReadBatch = {
    serviceClass: at(h, 2, 4),
    companyName: at(h, 5, 20).trimEnd(),
    companyId: at(h, 41, 50),
    secCode: at(h, 51, 53),
    entryDescription: at(h, 54, 63).trimEnd(),
    effectiveDate: at(h, 70, 75),
    odfi: at(h, 80, 87),
    batchNumber: num(h, 88, 94, "batch number"),
    entries: [],
    control: { entryAddendaCount: 0, entryHash: "", totalDebit: 0, totalCredit: 0 },
  };
  let i = start + 1;
  for (; i < lines.length && lines[i]?.[0] === "6"; ) {
    const e = lines[i] ?? "";
    const entry: ReadEntry = {
      transactionCode: at(e, 2, 3),
      receivingDfi: at(e, 4, 11),
      checkDigit: at(e, 12, 12),
      accountNumber: at(e, 13, 29).trimEnd(),
      amountCents: num(e, 30, 39, "amount"),
      individualId: at(e, 40, 54).trimEnd(),
      individualName: at(e, 55, 76).trimEnd(),
      addendaIndicator: at(e, 79, 79),
      traceNumber: at(e, 80, 94),
      addenda: [],
    };
    if (!abaCheckDigitOk(entry.receivingDfi + entry.checkDigit)) throw new Error(`record ${i + 1}: receiving DFI and check digit fail the ABA checksum`);
    if (!entry.traceNumber.startsWith(batch.odfi)) throw new Error(`record ${i + 1}: trace number does not start with the ODFI id`);
    i++;
    while (lines[i]?.[0] === "7") {
      const a = lines[i] ?? "";
      const addenda = { typeCode: at(a, 2, 3), info: at(a, 4, 83).trimEnd(), sequence: at(a, 84, 87), entrySequence: at(a, 88, 94) };
      if (addenda.entrySequence !== entry.traceNumber.slice(8))
        throw new Error(`record ${i + 1}: addenda names entry ${addenda.entrySequence}, not ${entry.traceNumber.slice(8)}`);
      entry.addenda.push(addenda);
      i++;
    }
    if ((entry.addendaIndicator === "1") !== entry.addenda.length > 0)
      throw new Error(`entry ${entry.traceNumber}: addenda indicator ${entry.addendaIndicator} with ${entry.addenda.length} addenda`);
    batch.entries.push(entry);
  }
  const c = lines[i] ?? "";
  if (c[0] !== "8") throw new Error(`record ${i + 1}: expected a batch control record`);
  batch.control = {
    entryAddendaCount: num(c, 5, 10, "batch entry/addenda count"),
    entryHash: at(c, 11, 20),
    totalDebit: num(c, 21, 32, "batch total debit"),
    totalCredit: num(c, 33, 44, "batch total credit"),
  };
  const credits = batch.entries.filter((e) => ["22", "32", "23", "33"].includes(e.transactionCode)).reduce((s, e) => s + e.amountCents, 0);
  const debits = batch.entries.filter((e) => ["27", "37", "28", "38"].includes(e.transactionCode)).reduce((s, e) => s + e.amountCents, 0);
  const check = (name: string, got: unknown, want: unknown) => {
    if (got !== want) throw new Error(`batch ${batch.batchNumber} control ${name} is ${String(got)}, the batch holds ${String(want)}`);
  };
  check("entry/addenda count", batch.control.entryAddendaCount, batch.entries.length + batch.entries.reduce((s, e) => s + e.addenda.length, 0));
  check("entry hash", batch.control.entryHash, hashOf(batch.entries.map((e) => e.receivingDfi)));
  check("total credit", batch.control.totalCredit, credits);
  check("total debit", batch.control.totalDebit, debits);
  check("service class", at(c, 2, 4), batch.serviceClass);
  check("batch number", num(c, 88, 94, "batch number"), batch.batchNumber);
  return { batch, next: i + 1 };
}

/** A notification of change a receiving bank sends: the original entry's trace, a change code and the corrected data. */
export interface BuiltNotice {
  trace: string;
  code: string;
  /** Positions 36–64 of the type 98 addenda, as NACHA lays it out for the code (padded to 29 characters). */
  correctedData: string;
}

const padTo = (s: string, n: number) => s.slice(0, n).padEnd(n, " ");
const zeroTo = (v: number | string, n: number) => String(v).padStart(n, "0");

/**
 * A return file as a receiving bank sends it for some entries of an original file: each returned entry with
 * transaction code 21 (checking) or 31 (savings) and a type 99 addenda carrying the R code and the original
 * trace number; and, when `notices` are given, a second batch of SEC code COR: each a zero-dollar entry (21/31)
 * with a type 98 addenda carrying the change code, the original trace number and the corrected data (positions
 * 36–64). Built from the positions, independently of the service's parser.
 */
export function buildReturnFile(
  original: ReadFile,
  returns: Array<{ trace: string; code: string; unknownAmountCents?: number }>,
  notices: BuiltNotice[] = [],
): string {
  const pad = padTo;
  const zero = zeroTo;
  const entries = original.batches.flatMap((b) => b.entries);
  const rdfi = "09100001"; // the returning bank's id, prefix of the return entries' own trace numbers
  const lines = [
    `101 ${original.immediateDestination}${pad(original.immediateOrigin, 10)}${original.creationDate}0900R094101${pad("RETURNING BANK", 23)}${pad("ORIGINATOR", 23)}        `,
  ];
  const entryOf = (trace: string, unknownAmountCents?: number) => {
    const found = entries.find((x) => x.traceNumber === trace);
    // A return naming an entry the original file does not hold (a bank's mistake), when the test asks for one.
    const stranger =
      entries[0] === undefined || unknownAmountCents === undefined ? undefined : { ...entries[0], traceNumber: trace, amountCents: unknownAmountCents };
    const e = found ?? stranger;
    if (e === undefined) throw new Error(`no entry ${trace} in the original file`);
    return e;
  };
  let seq = 0;
  let batchNo = 0;
  let fileHash = 0n;
  let fileCredit = 0;
  let fileCount = 0;
  const batch = (
    sec: string,
    items: Array<{ trace: string; amountCents?: number; addenda: (ownTrace: string, dfi: string) => string; unknown?: number | undefined }>,
  ) => {
    if (items.length === 0) return;
    batchNo++;
    lines.push(
      `5220${pad("RETURNS", 16)}${pad("", 20)}${pad("RETURNS", 10)}${sec}${pad("PAYOUT", 10)}      ${original.batches[0]?.effectiveDate ?? "000000"}   1${rdfi}${zero(batchNo, 7)}`,
    );
    let credit = 0;
    let hash = 0n;
    for (const item of items) {
      const e = entryOf(item.trace, item.unknown);
      const code = e.transactionCode === "32" ? "31" : "21";
      const ownTrace = `${rdfi}${zero(++seq, 7)}`;
      const amount = item.amountCents ?? e.amountCents;
      lines.push(
        `6${code}${e.receivingDfi}${e.checkDigit}${pad(e.accountNumber, 17)}${zero(amount, 10)}${pad(e.individualId, 15)}${pad(e.individualName, 22)}  1${ownTrace}`,
      );
      lines.push(item.addenda(ownTrace, e.receivingDfi));
      credit += amount;
      hash += BigInt(e.receivingDfi);
    }
    const h = zero((hash % 10_000_000_000n).toString(), 10);
    lines.push(`8220${zero(items.length * 2, 6)}${h}${zero(0, 12)}${zero(credit, 12)}${pad("RETURNS", 10)}${pad("", 25)}${rdfi}${zero(batchNo, 7)}`);
    fileHash += hash;
    fileCredit += credit;
    fileCount += items.length * 2;
  };
  batch(
    "PPD",
    returns.map((r) => ({ trace: r.trace, unknown: r.unknownAmountCents, addenda: (own, dfi) => `799${r.code}${r.trace}      ${dfi}${pad("", 44)}${own}` })),
  );
  batch(
    "COR",
    notices.map((n) => ({
      trace: n.trace,
      amountCents: 0,
      addenda: (own, dfi) => `798${pad(n.code, 3)}${n.trace}      ${dfi}${pad(n.correctedData, 29)}${pad("", 15)}${own}`,
    })),
  );
  const h = zero((fileHash % 10_000_000_000n).toString(), 10);
  const blocks = Math.ceil((lines.length + 1) / 10);
  lines.push(`9${zero(batchNo, 6)}${zero(blocks, 6)}${zero(fileCount, 8)}${h}${zero(0, 12)}${zero(fileCredit, 12)}${pad("", 39)}`);
  while (lines.length % 10 !== 0) lines.push("9".repeat(94));
  for (const [i, l] of lines.entries()) if (l.length !== 94) throw new Error(`return file record ${i + 1} is ${l.length} characters`);
  return `${lines.join("\r\n")}\r\n`;
}
