/** Turning schema failures into the API's validation errors: one mapping for the gateway and every service. */
import type { z } from "zod";
import { DomainError, isErrorCode, type ErrorCode, type ValidationDetail } from "./errors.ts";

const NESTING_MAX = 64;

/** True when any string (key or value) inside `v` contains U+0000, which PostgreSQL text and jsonb cannot hold. */
export function containsNul(v: unknown, depth = 0): boolean {
  if (typeof v === "string") return v.includes("\u0000");
  if (depth > NESTING_MAX || v === null || typeof v !== "object") return false;
  if (Array.isArray(v)) return v.some((x) => containsNul(x, depth + 1));
  return Object.entries(v).some(([k, x]) => k.includes("\u0000") || containsNul(x, depth + 1));
}

/**
 * Details of a failed parse, and its code: `validation_error`, unless a schema named a more precise code in an
 * issue's params (`amount_too_large`, `invalid_limit`).
 */
export function validationProblem(error: z.ZodError): { code: ErrorCode; details: ValidationDetail[] } {
  let code: ErrorCode = "validation_error";
  const details = error.issues.map((i) => {
    const named = (i as { params?: { error_code?: unknown } }).params?.error_code;
    if (code === "validation_error" && typeof named === "string" && isErrorCode(named)) code = named;
    return { path: i.path.map(String).join("."), message: i.message };
  });
  return { code, details };
}

/** Parses `value` or throws the DomainError a client should see (a bad input is a 400, never a 500). */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, where = "body"): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) {
    const { code, details } = validationProblem(parsed.error);
    throw new DomainError(code, `Invalid ${where}: ${details.map((d) => `${d.path || `(${where})`}: ${d.message}`).join("; ")}`, { details });
  }
  if (containsNul(parsed.data)) {
    throw new DomainError("validation_error", `Invalid ${where}: strings must not contain U+0000`, { details: [{ path: "", message: "must not contain U+0000" }] });
  }
  return parsed.data;
}
