import { invalidStatement, type StatementErrorDetails } from "./errors.ts";

/**
 * The longest text a reader keeps as one field: a CSV cell, an MT940 field with its continuation lines, a BAI2
 * record with its continuations, an OFX or camt.053 element's text. The formats' own limits are far lower (MT940
 * `:86:` 6 × 65 characters, camt Max500Text, OFX MEMO 255), so a longer field is not a statement; refusing it
 * before any pattern reads it keeps every reader's work proportional to its input.
 */
export const FIELD_CHARS_MAX = 16 * 1024;

/** No written amount is longer, symbols, separators and signs included; a longer one is refused unread. */
export const AMOUNT_CHARS_MAX = 64;

/** Element nesting of OFX and camt.053 (both under 15 levels); deeper documents are refused. */
export const NESTING_DEPTH_MAX = 64;

/** An XML element's name (camt.053's are under 20 characters). */
export const NAME_CHARS_MAX = 128;

/** Refuses a field longer than `max` characters (only its start is quoted back). */
export function checkFieldLength(length: number, what: string, details: StatementErrorDetails, max = FIELD_CHARS_MAX): void {
  if (length <= max) return;
  throw invalidStatement(`${what} is ${length} characters long; at most ${max} are read`, details);
}

/** The start of a long value, for error details. */
export function excerpt(text: string, chars = 40): string {
  return text.length <= chars ? text : `${text.slice(0, chars)}…`;
}
