import { StatementError } from "./errors.ts";
import type { Warnings } from "./warnings.ts";

/** Encodings a caller may name, mapped to the WHATWG decoder label. Latin-1 is read as its superset windows-1252, as browsers do. */
const ENCODINGS: Readonly<Record<string, string>> = {
  "utf-8": "utf-8",
  utf8: "utf-8",
  latin1: "windows-1252",
  "iso-8859-1": "windows-1252",
  "iso8859-1": "windows-1252",
  "windows-1252": "windows-1252",
  cp1252: "windows-1252",
  "1252": "windows-1252",
  "iso-8859-15": "iso-8859-15",
  "utf-16le": "utf-16le",
  "utf-16be": "utf-16be",
  "us-ascii": "utf-8",
  usascii: "utf-8",
  ascii: "utf-8",
};

/** The decoder label for a caller's or a file's encoding name, or null when it is not one we read. */
export function decoderLabel(name: string): string | null {
  return ENCODINGS[name.trim().toLowerCase()] ?? null;
}

function bomEncoding(bytes: Buffer): { label: string; skip: number } | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { label: "utf-8", skip: 3 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { label: "utf-16le", skip: 2 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { label: "utf-16be", skip: 2 };
  return null;
}

/** Decode with a named encoding; an unknown name is the caller's error, not a guess. */
export function decodeAs(bytes: Buffer, encoding: string): string {
  const label = decoderLabel(encoding);
  if (label === null)
    throw new StatementError("unsupported_encoding", `encoding ${encoding} is not supported (use utf-8, latin1, windows-1252 or utf-16le)`, {
      field: "encoding",
      value: encoding,
    });
  const bom = bomEncoding(bytes);
  return new TextDecoder(label).decode(bom && bom.label === label ? bytes.subarray(bom.skip) : bytes);
}

/**
 * Decode bytes whose encoding the caller did not name: a byte-order mark wins; then UTF-8 when the bytes are
 * valid UTF-8 (banks often declare 1252 and send UTF-8); else `fallback` (the file's own declaration, or
 * windows-1252), with a warning.
 */
export function decodeGuess(bytes: Buffer, warnings: Warnings, fallback = "windows-1252"): string {
  const bom = bomEncoding(bytes);
  if (bom) return new TextDecoder(bom.label).decode(bytes.subarray(bom.skip));
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    const label = decoderLabel(fallback) ?? "windows-1252";
    warnings.add("encoding_fallback", `the bytes are not UTF-8; read as ${label}`);
    return new TextDecoder(label).decode(bytes);
  }
}

/** Input as text: strings pass through (less a leading BOM), buffers are decoded. */
export function inputText(input: Buffer | string, warnings: Warnings, encoding?: string): string {
  if (typeof input === "string") return input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  return encoding === undefined ? decodeGuess(input, warnings) : decodeAs(input, encoding);
}

/** True when the text has characters beyond ASCII. */
export function hasNonAscii(text: string): boolean {
  return /[^\x00-\x7f]/.test(text);
}

// C0 control characters other than tab, line feed and carriage return: SWIFT envelopes (SOH, ETX) and
// transmission debris that no statement field may contain.
const CONTROL_RE = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

export function hasControlChars(text: string): boolean {
  CONTROL_RE.lastIndex = 0;
  return CONTROL_RE.test(text);
}

export function stripControlChars(text: string): string {
  return text.replace(CONTROL_RE, "");
}

export interface Line {
  text: string;
  /** 1-based. */
  no: number;
}

/** Physical lines, accepting LF, CRLF and lone CR endings; a final line without a newline is still a line. */
export function* readLines(text: string): Generator<Line> {
  let start = 0;
  let no = 1;
  const length = text.length;
  while (start < length) {
    let end = start;
    while (end < length) {
      const c = text.charCodeAt(end);
      if (c === 10 || c === 13) break;
      end++;
    }
    yield { text: text.slice(start, end), no };
    no++;
    if (end < length && text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10) end++;
    start = end + 1;
  }
}
