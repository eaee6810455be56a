/** The messages between the ledger and its statement-parsing workers (pool.ts ↔ worker.ts). */
import type { ParseOptions, ParseResult, StatementErrorCode, StatementErrorDetails } from "@treasury/bank-statements";

/** One statement to read. Buffers arrive as Uint8Array (structured clone keeps the bytes, not the class). */
export interface ParseJob {
  input: Uint8Array | string;
  opts: ParseOptions;
}

export type WorkerMessage =
  /** The worker has loaded the parser and reads jobs from now on. */
  | { type: "ready" }
  | { type: "parsed"; result: ParseResult }
  /** The library refused the statement: its StatementError, field by field. */
  | { type: "refused"; code: StatementErrorCode; message: string; details: StatementErrorDetails }
  /** Anything else the parser threw: a bug, answered as one. */
  | { type: "failed"; message: string; stack?: string };
