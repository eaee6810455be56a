import { checkFieldLength } from "../core/limits.ts";
import { hasControlChars, readLines, stripControlChars } from "../core/text.ts";
import type { Warnings } from "../core/warnings.ts";

/** A logical BAI2 record: its code, its fields (88 continuations already merged in), its first line. */
export interface Bai2Record {
  code: string;
  fields: string[];
  line: number;
  /** Physical records it was built from (the record itself plus its 88s), for the trailers' record counts. */
  physical: number;
}

const CODES = "01|02|03|16|49|88|98|99";
const RECORD_START = new RegExp(`^\\s*(${CODES}),`);
/** A malformed continuation written with a colon (`88:EREF…`). */
const MALFORMED_88 = /^\s*88:/;
/**
 * Where one record ends and the next begins on the same physical line: a slash, optional spaces, then a record
 * code and a comma (or the end of the line). A slash anywhere else is text (`AB/GS/…`, `08/18/23`).
 */
const BOUNDARY = new RegExp(`/\\s*(?=(?:${CODES}),|$)`, "g");

interface RawRecord {
  code: string;
  content: string;
  line: number;
  closed: boolean;
}

/** Split one physical line into record pieces; the first may continue the previous record. */
function pieces(text: string): { body: string; closed: boolean }[] {
  const out: { body: string; closed: boolean }[] = [];
  let start = 0;
  BOUNDARY.lastIndex = 0;
  for (let m = BOUNDARY.exec(text); m !== null; m = BOUNDARY.exec(text)) {
    out.push({ body: text.slice(start, m.index), closed: true });
    start = m.index + m[0].length;
    if (start >= text.length) break;
  }
  if (start < text.length && text.slice(start).trim() !== "") out.push({ body: text.slice(start), closed: false });
  return out;
}

/**
 * Physical BAI2 records. Records end with `/`, but several may share a line, a record may run on to the next line
 * (that line does not start with a record code), and some banks end records at the newline without `/`.
 */
function* rawRecords(text: string, warnings: Warnings): Generator<RawRecord> {
  let open: RawRecord | undefined;
  for (const raw of readLines(text)) {
    let line = hasControlChars(raw.text) ? stripControlChars(raw.text) : raw.text;
    if (line.trim() === "") continue;
    if (MALFORMED_88.test(line)) {
      warnings.add("malformed_record", "continuation record written as `88:`; read as `88,`", raw.no);
      line = line.replace(":", ",");
    }
    const startsRecord = RECORD_START.test(line);
    const parts = pieces(line);
    let first = 0;
    if (!startsRecord) {
      if (!open) {
        warnings.add("unrecognised_line", "line is neither a record nor the continuation of one; ignored", raw.no);
        continue;
      }
      const head = parts[0];
      if (head) {
        open.content += (open.code === "16" || open.code === "88" ? " " : "") + head.body.trim();
        open.closed = head.closed;
      }
      first = 1;
      if (open.closed) {
        yield open;
        open = undefined;
      }
    } else if (open) {
      yield open;
      open = undefined;
    }
    for (let i = first; i < parts.length; i++) {
      const part = parts[i] as { body: string; closed: boolean };
      const m = RECORD_START.exec(part.body);
      if (!m) {
        warnings.add("unrecognised_text", `text "${part.body.trim().slice(0, 40)}" between records ignored`, raw.no);
        continue;
      }
      const rec: RawRecord = { code: m[1] as string, content: part.body.slice(m[0].length), line: raw.no, closed: part.closed };
      if (rec.closed) yield rec;
      else open = rec;
    }
  }
  if (open) yield open;
}

/** The index of the text field in a 16 record's fields, once the funds type makes it knowable. */
export function detailTextIndex(fields: readonly string[]): number | null {
  const funds = (fields[2] ?? "").trim().toUpperCase();
  if (fields.length < 3) return null;
  if (funds === "V") return 7;
  if (funds === "S") return 8;
  if (funds === "D") {
    const count = Number((fields[3] ?? "").trim());
    if (fields.length < 4 || !Number.isInteger(count) || count < 0) return null;
    return 4 + 2 * count + 2;
  }
  return 5;
}

/** Split a 16 record: the fields before the text on commas, the text whole (it may hold commas). */
function splitDetail(content: string): string[] {
  const fields: string[] = [];
  let rest = content;
  while (true) {
    const textAt = detailTextIndex(fields);
    if (textAt !== null && fields.length === textAt) {
      fields.push(rest);
      return fields;
    }
    const comma = rest.indexOf(",");
    if (comma < 0) {
      fields.push(rest);
      return fields;
    }
    fields.push(rest.slice(0, comma));
    rest = rest.slice(comma + 1);
  }
}

/**
 * Logical records: each 88 continues the record before it, either its field list (`,`) or, once a 16 record's
 * free text has begun, that text (joined with a space).
 */
export function* bai2Records(text: string, warnings: Warnings): Generator<Bai2Record> {
  let pending: Pending | undefined;
  const emit = (p: Pending): Bai2Record => ({
    code: p.code,
    fields: p.code === "16" ? splitDetail(p.content) : p.content.split(","),
    line: p.line,
    physical: p.physical,
  });
  for (const rec of rawRecords(text, warnings)) {
    const content = rec.content.trimEnd();
    if (rec.code === "88") {
      if (!pending) {
        warnings.add("orphan_continuation", "88 record with nothing to continue; ignored", rec.line);
        continue;
      }
      continueRecord(pending, content);
      continue;
    }
    if (pending) yield emit(pending);
    pending = { code: rec.code, content, line: rec.line, physical: 1, textBegun: false, fields: rec.code === "16" ? content.split(",") : [] };
    checkFieldLength(content.length, `record ${rec.code}`, { line: rec.line, field: rec.code });
  }
  if (pending) yield emit(pending);
}

/** A logical record being built from its physical records. */
interface Pending {
  code: string;
  content: string;
  line: number;
  physical: number;
  textBegun: boolean;
  /** A 16 record's fields split on every comma, kept until its text begins (none for other records). */
  fields: string[];
}

/**
 * Adds an 88 record to the record it continues. Whether a 16 record's text has begun is read from the fields kept
 * so far, extended by each continuation, never from the whole record split again: that was quadratic in the
 * number of continuations of a record whose text never begins.
 */
function continueRecord(pending: Pending, content: string): void {
  if (pending.code === "16" && !pending.textBegun) {
    pending.textBegun = pending.fields.length > (detailTextIndex(pending.fields) ?? Infinity);
  }
  pending.content += pending.textBegun ? ` ${content}` : `,${content}`;
  if (pending.code === "16" && !pending.textBegun) for (const f of content.split(",")) pending.fields.push(f);
  pending.physical++;
  checkFieldLength(pending.content.length, `record ${pending.code} with its continuations`, { line: pending.line, field: pending.code });
}
