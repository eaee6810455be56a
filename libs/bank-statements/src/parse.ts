import { parseBai2 } from "./bai2/parse.ts";
import { parseCamt053 } from "./camt053/parse.ts";
import { detectFormat } from "./core/detect.ts";
import { invalidStatement, StatementError } from "./core/errors.ts";
import { STATEMENT_FORMATS, type FormatOption, type ParseResult, type Statement, type StatementFormat } from "./core/types.ts";
import { Warnings } from "./core/warnings.ts";
import { parseCsvMapping, type CsvMappingInput } from "./csv/mapping.ts";
import { parseCsv } from "./csv/parse.ts";
import { parseMt940 } from "./mt940/parse.ts";
import { parseOfx } from "./ofx/parse.ts";

/** The import endpoint accepts 1 MiB bodies; the library allows headroom for files read from elsewhere. */
export const STATEMENT_BYTES_MAX = 16 * 1024 * 1024;

export interface ParseOptions {
  format: FormatOption;
  /** Required for CSV; validated here (errors are `mapping_required` / `invalid_mapping`). */
  mapping?: CsvMappingInput;
  /** Refuse larger inputs (`statement_too_large`). Defaults to STATEMENT_BYTES_MAX. */
  bytesMax?: number;
}

/** Enough of the start of a buffer to detect the format from its markers (all ASCII). */
function headText(input: Buffer | string): string {
  if (typeof input === "string") return input.slice(0, 8192);
  const head = input.subarray(0, 16384);
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) {
    return new TextDecoder(head[0] === 0xff ? "utf-16le" : "utf-16be").decode(head);
  }
  return head.toString("latin1");
}

function read(format: StatementFormat, input: Buffer | string, opts: ParseOptions, warnings: Warnings): Statement[] {
  switch (format) {
    case "ofx":
    case "qfx":
      return parseOfx(input, warnings);
    case "camt053":
      return parseCamt053(input, warnings);
    case "bai2":
      return parseBai2(input, warnings);
    case "mt940":
      return parseMt940(input, warnings);
    case "csv":
      return parseCsv(input, parseCsvMapping(opts.mapping), warnings);
  }
}

/**
 * Parse a bank statement. Pure: it reads only the given bytes or text. Every failure is a StatementError with a
 * stable code; amounts are exact (integers in minor units plus the written decimal).
 */
export function parseStatement(input: Buffer | string, opts: ParseOptions): ParseResult {
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.length;
  const max = opts.bytesMax ?? STATEMENT_BYTES_MAX;
  if (size > max) throw new StatementError("statement_too_large", `statement is ${size} bytes; at most ${max} are accepted`, { value: String(size) });
  if (opts.format !== "auto" && !(STATEMENT_FORMATS as readonly string[]).includes(opts.format)) {
    throw new StatementError("unsupported_format", `format ${String(opts.format)} is not one of auto, ${STATEMENT_FORMATS.join(", ")}`, {
      field: "format",
      value: String(opts.format),
    });
  }
  if (size === 0 || headText(input).trim() === "") throw invalidStatement("the statement is empty", { line: 1 });
  const format = opts.format === "auto" ? detectFormat(headText(input)) : opts.format;
  if (format === "csv" && opts.format === "auto" && opts.mapping === undefined) {
    throw new StatementError("mapping_required", "the content is not OFX, camt.053, BAI2 or MT940; read as CSV it needs a mapping", { field: "mapping" });
  }
  const warnings = new Warnings();
  const statements = read(format, input, opts, warnings);
  return { format, statements, warnings: warnings.result() };
}
