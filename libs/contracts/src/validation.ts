/** Turning schema failures into the API's validation errors: one mapping for the gateway and every service. */
import type { z } from "zod";
import { DomainError, isErrorCode, type ErrorCode, type ValidationDetail } from "./errors.ts";

/** The deepest nesting of objects and arrays a request body may have. */
export const JSON_DEPTH_MAX = 32;

/**
 * Whether JSON text nests objects and arrays deeper than `max`, found by scanning the text without parsing it: a
 * 10,000-deep body is refused before anything is built from it (walking such a value would overflow the stack).
 */
export function jsonDepthExceeds(text: string, max = JSON_DEPTH_MAX): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Why a value's strings (keys or values) cannot be stored: `nul` (U+0000, which PostgreSQL text and jsonb
 * cannot hold) or `surrogate` (a lone UTF-16 surrogate, which is not Unicode text and which PostgreSQL refuses in
 * jsonb); undefined when every string is storable. Walks without recursion: callers bound the depth first.
 */
export function unstorableString(v: unknown): "nul" | "surrogate" | undefined {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === "string") {
      if (x.includes("\u0000")) return "nul";
      if (!x.isWellFormed()) return "surrogate";
    } else if (Array.isArray(x)) {
      for (const item of x) stack.push(item);
    } else if (x !== null && typeof x === "object") {
      for (const [k, item] of Object.entries(x)) {
        stack.push(k);
        stack.push(item);
      }
    }
  }
  return undefined;
}

/** The client's error for an unstorable string (see unstorableString), or undefined. */
export function unstorableStringError(v: unknown, where: string): DomainError | undefined {
  const bad = unstorableString(v);
  if (bad === undefined) return undefined;
  const message = bad === "nul" ? "must not contain U+0000" : "must be valid Unicode (no lone UTF-16 surrogates)";
  return new DomainError("validation_error", `${where} strings ${message}`, { details: [{ path: "", message }] });
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
  const bad = unstorableStringError(parsed.data, `Invalid ${where}:`);
  if (bad !== undefined) throw bad;
  return parsed.data;
}
