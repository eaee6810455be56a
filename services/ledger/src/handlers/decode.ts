/** Decoding RPC bodies and queries with the shared contracts: a bad one is a typed 400, never a 500. */
import { DomainError, parseOrThrow } from "@treasury/contracts";
import type { z } from "zod";

export function decode<T extends z.ZodType>(schema: T, value: unknown, where: "body" | "query"): z.output<T> {
  return parseOrThrow(schema, value, where);
}

export function param(params: Record<string, string>, name: string): string {
  const v = params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}
