/**
 * The stable codes a parse can fail with. The ledger's import endpoint maps each to a 400 through the error
 * table in libs/contracts; none of them is a server fault.
 */
export const STATEMENT_ERROR_CODES = [
  "unsupported_format",
  "unsupported_encoding",
  "invalid_statement",
  "mapping_required",
  "invalid_mapping",
  "statement_too_large",
] as const;
export type StatementErrorCode = (typeof STATEMENT_ERROR_CODES)[number];

/** Where in the input a problem is: a 1-based line, a field or column name, and what was found there. */
export interface StatementErrorDetails {
  line?: number;
  field?: string;
  value?: string;
  path?: string;
}

/** A statement that cannot be read. Carries a stable `code` and no HTTP knowledge. */
export class StatementError extends Error {
  readonly code: StatementErrorCode;
  readonly details: StatementErrorDetails;

  constructor(code: StatementErrorCode, message: string, details: StatementErrorDetails = {}) {
    super(message);
    this.name = "StatementError";
    this.code = code;
    this.details = details;
  }
}

/** Shorthand for the commonest failure: the file says something this format does not allow. */
export function invalidStatement(message: string, details: StatementErrorDetails = {}): StatementError {
  return new StatementError("invalid_statement", message, details);
}
