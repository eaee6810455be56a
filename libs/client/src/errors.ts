/**
 * Typed errors. Every error the API answers is the envelope `{success: false, error, error_code, request_id, …}`;
 * the client raises it as one `TreasuryError` whose `code` is the union of every code in the OpenAPI document, so
 * `switch (e.code)` is checked by the compiler. A request that never got an answer is a `TreasuryConnectionError`.
 */
import type { components } from "./generated/openapi.ts";

/** Every `error_code` the API can answer (generated from the OpenAPI document). */
export type ErrorCode = components["schemas"]["Error"]["error_code"];

/** What a code says about the next step, read from the HTTP status (docs/api.md, Errors). */
export type ErrorFamily =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "conflict"
  | "unprocessable"
  | "rate_limit"
  | "unavailable"
  | "server";

export interface ErrorDetail {
  path?: string;
  message?: string;
}

export interface ErrorEnvelope {
  success: false;
  error: string;
  error_code: ErrorCode;
  request_id: string;
  hint?: string;
  retry_after?: number;
  details?: ErrorDetail[];
  [key: string]: unknown;
}

function familyOf(status: number): ErrorFamily {
  if (status === 401) return "authentication";
  if (status === 403) return "permission";
  if (status === 404 || status === 405) return "not_found";
  if (status === 409) return "conflict";
  if (status === 422) return "unprocessable";
  if (status === 429) return "rate_limit";
  if (status === 503 || status === 504) return "unavailable";
  if (status >= 500) return "server";
  return "invalid_request";
}

/** An error answered by the API. `body` keeps the whole envelope (a 409 carries the existing resource there). */
export class TreasuryError extends Error {
  override readonly name = "TreasuryError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly family: ErrorFamily;
  readonly requestId: string | undefined;
  readonly hint: string | undefined;
  readonly details: ErrorDetail[];
  /** Seconds to wait before retrying, from `Retry-After` or `retry_after`. */
  readonly retryAfter: number | undefined;
  readonly body: ErrorEnvelope;
  /** How many requests were made before this answer was given up on (1 when it was not retried). */
  readonly attempts: number;
  /** The replay key the request carried: after a 503 or 504 the outcome is unknown, and a call with it learns it. */
  readonly idempotencyKey: string | undefined;

  constructor(status: number, body: ErrorEnvelope, attempts: number, retryAfter?: number, idempotencyKey?: string) {
    super(`${body.error_code}: ${body.error}`);
    this.code = body.error_code;
    this.status = status;
    this.family = familyOf(status);
    this.requestId = body.request_id;
    this.hint = body.hint;
    this.details = body.details ?? [];
    this.retryAfter = retryAfter ?? body.retry_after;
    this.body = body;
    this.attempts = attempts;
    this.idempotencyKey = idempotencyKey;
  }

  /** Narrows to one code: `if (e.is("insufficient_balance")) …`. */
  is<C extends ErrorCode>(code: C): this is TreasuryError & { code: C } {
    return this.code === code;
  }
}

/**
 * No answer arrived (the connection failed or the attempt timed out) on the last attempt. For an operation that
 * moves money the outcome is unknown: call again with the same `idempotencyKey` (or `reference_id`) to learn it.
 */
export class TreasuryConnectionError extends Error {
  override readonly name = "TreasuryConnectionError";
  readonly attempts: number;
  /** The replay key the request carried, to send again. */
  readonly idempotencyKey: string | undefined;

  constructor(message: string, attempts: number, idempotencyKey: string | undefined, cause: unknown) {
    super(message, { cause });
    this.attempts = attempts;
    this.idempotencyKey = idempotencyKey;
  }
}

/** A body that is the error envelope; anything else from a failed answer is reported as an `internal_error`. */
export function toErrorEnvelope(status: number, body: unknown): ErrorEnvelope {
  if (body !== null && typeof body === "object" && typeof (body as ErrorEnvelope).error_code === "string") {
    return body as ErrorEnvelope;
  }
  return {
    success: false,
    error: `HTTP ${status} without an error envelope`,
    error_code: "internal_error",
    request_id: "",
  };
}

export function isTreasuryError<C extends ErrorCode>(e: unknown, code?: C): e is TreasuryError & { code: C } {
  return e instanceof TreasuryError && (code === undefined || e.code === code);
}
