/** The one place the gateway turns error codes into HTTP answers in the spec's envelope. */
import type { FastifyReply, FastifyRequest } from "fastify";
import { API_VERSION, ERROR_CODES, isErrorCode, newRequestId, type RpcErrorBody, type ValidationDetail } from "@treasury/contracts";

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
const RETRY_AFTER_SEC: Readonly<Record<string, number>> = { service_unavailable: 1, service_timeout: 1, risk_unavailable: 5 };

export function fromRpcError(e: RpcErrorBody): ErrorAnswer {
  return { code: e.code, message: e.message, hint: e.hint, details: e.details, extra: e.extra, retryAfterSec: RETRY_AFTER_SEC[e.code] };
}

/** Status and body of an error; unknown codes become a generic 500 (the real cause is in the log). */
export function errorEnvelope(requestId: string, e: ErrorAnswer): { status: number; body: Record<string, unknown> } {
  const known = isErrorCode(e.code);
  const status = known ? ERROR_CODES[e.code as keyof typeof ERROR_CODES].status : 500;
  const code = known ? e.code : "internal_error";
  const message =
    status >= 500 && code === "internal_error"
      ? `Internal server error; share request_id ${requestId} with support`
      : (e.message ?? ERROR_CODES[code as keyof typeof ERROR_CODES].message);
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

/** The code of an error Node's HTTP parser raised on a connection before any request existed. */
function clientErrorCode(err: { code?: string }): "headers_too_large" | "request_timeout" | "malformed_request" {
  if (err.code === "HPE_HEADER_OVERFLOW") return "headers_too_large";
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") return "request_timeout";
  return "malformed_request";
}

/**
 * The raw HTTP answer to a connection-level error (a request line and headers over the limit, bytes that are not
 * HTTP): the same envelope as every other answer, with a request id of its own, and the connection closed.
 */
export function clientErrorResponse(err: { code?: string }): string {
  const requestId = newRequestId();
  const { status, body } = errorEnvelope(requestId, { code: clientErrorCode(err) });
  const json = JSON.stringify(body);
  return [
    `HTTP/1.1 ${status} ${status === 431 ? "Request Header Fields Too Large" : status === 408 ? "Request Timeout" : "Bad Request"}`,
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(json)}`,
    `Service-Version: ${API_VERSION}`,
    `X-Request-Id: ${requestId}`,
    "Connection: close",
    "",
    json,
  ].join("\r\n");
}
