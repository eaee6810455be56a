/** Decoding RPC bodies and queries with the shared contracts: a bad one is a typed 400, never a 500. */
import { DomainError, isErrorCode, type AuthContext } from "@treasury/contracts";
import type { z } from "zod";
import type { Scope } from "../store/accounts.ts";

export function decode<T extends z.ZodType>(schema: T, value: unknown, where: "body" | "query"): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  // Schemas name a specific code (invalid_limit, amount_too_large) in an issue's params where one applies.
  let code: "validation_error" | "invalid_limit" | "amount_too_large" = "validation_error";
  for (const issue of parsed.error.issues) {
    const named = (issue as { params?: { error_code?: unknown } }).params?.error_code;
    if ((named === "invalid_limit" || named === "amount_too_large") && isErrorCode(named)) code = named;
  }
  throw new DomainError(code, `Invalid ${where}: ${details.map((d) => `${d.path || `(${where})`}: ${d.message}`).join("; ")}`, { details });
}

export function scopeOf(auth: AuthContext): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}

export function param(params: Record<string, string>, name: string): string {
  const v = params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}
