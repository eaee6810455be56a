/** What a statement-parsing worker answers to one job: the parse, the library's refusal, or the failure. */
import { parseStatement, StatementError } from "@treasury/bank-statements";
import type { ParseJob, WorkerMessage } from "./protocol.ts";

export function answer(job: ParseJob): WorkerMessage {
  const input = typeof job.input === "string" ? job.input : Buffer.from(job.input.buffer, job.input.byteOffset, job.input.byteLength);
  try {
    return { type: "parsed", result: parseStatement(input, job.opts) };
  } catch (error) {
    if (error instanceof StatementError) return { type: "refused", code: error.code, message: error.message, details: error.details };
    const e = error instanceof Error ? error : new Error(String(error));
    return { type: "failed", message: e.message, ...(e.stack === undefined ? {} : { stack: e.stack }) };
  }
}
