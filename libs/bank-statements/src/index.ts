export { parseStatement, STATEMENT_BYTES_MAX, type ParseOptions } from "./parse.ts";
export { detectFormat } from "./core/detect.ts";
export { StatementError, STATEMENT_ERROR_CODES, type StatementErrorCode, type StatementErrorDetails } from "./core/errors.ts";
export { minorUnits } from "./core/currency.ts";
export { CsvMappingSchema, parseCsvMapping, DATE_FORMATS, type CsvMapping, type CsvMappingInput } from "./csv/mapping.ts";
export * from "./core/types.ts";
export { autoMatch, type AutoMatchOptions, type BankLine, type LedgerTransaction, type MatchResult, type MatchedPair } from "./match/auto-match.ts";
