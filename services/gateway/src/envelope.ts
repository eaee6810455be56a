/** The one place the gateway turns error codes into HTTP answers in the spec's envelope. */
import type { FastifyReply, FastifyRequest } from "fastify";
import { ERROR_CODES, isErrorCode, type RpcErrorBody, type ValidationDetail } from "@treasury/contracts";

export interface ErrorAnswer {
  code: string;
  message?: string | undefined;
  hint?: string | undefined;
  details?: ValidationDetail[] | undefined;
  extra?: Record<string, unknown> | undefined;
  retryAfterSec?: number | undefined;
}

/**
 * Retryable answers say when to try again (Retry-After and retry_after): an overloaded or unreachable service,
 * or an outcome not known yet, in a second, with the same idempotency key.
 */
const RETRY_AFTER_SEC: Readonly<Record<string, number>> = { service_unavailable: 1, service_timeout: 1 };

export function fromRpcError(e: RpcErrorBody): ErrorAnswer {
  return { code: e.code, message: e.message, hint: e.hint, details: e.details, extra: e.extra, retryAfterSec: RETRY_AFTER_SEC[e.code] };
}

/** Status and body of an error; unknown codes become a generic 500 (the real cause is in the log). */
export function errorEnvelope(requestId: string, e: ErrorAnswer): { status: number; body: Record<string, unknown> } {
  const known = isErrorCode(e.code);
  const status = known ? ERROR_CODES[e.code as keyof typeof ERROR_CODES].status : 500;
  const code = known ? e.code : "internal_error";
  const message = status >= 500 && code === "internal_error" ? `Internal server error; share request_id ${requestId} with support` : (e.message ?? ERROR_CODES[code as keyof typeof ERROR_CODES].message);
  const body: Record<string, unknown> = { ...(e.extra ?? {}), success: false, error: message, error_code: code, request_id: requestId };
  if (e.hint !== undefined) body.hint = e.hint;
  if (e.details !== undefined) body.details = e.details;
  if (e.retryAfterSec !== undefined) body.retry_after = e.retryAfterSec;
  return { status, body };
}

export function sendError(req: FastifyRequest, reply: FastifyReply, e: ErrorAnswer): FastifyReply {
  const { status, body } = errorEnvelope(String(req.id), e);
  if (e.retryAfterSec !== undefined) reply.header("Retry-After", String(e.retryAfterSec));
  return reply.code(status).type("application/json").send(body);
}
