/**
 * Fields the schemas of every domain share: strings with a length cap, metadata, dates, paging numbers, return
 * URLs. Only `Metadata`, `StringMetadata` and `pagingInt` are part of `schemas` from @treasury/contracts; the
 * rest are building blocks for the files beside this one.
 */
import { z } from "zod";

export const str = (max = 500) => z.string({ error: "must be a string" }).max(max);
export const bool = z.boolean({ error: "must be a boolean" });
/** Free-form metadata: an object, at most 50 keys and 16 KiB serialised. */
export const Metadata = z
  .record(z.string(), z.unknown(), { error: "must be an object" })
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .refine((m) => JSON.stringify(m).length <= 16_384, { message: "at most 16 KiB" });
/** String-to-string metadata (checkout sessions). */
export const StringMetadata = z
  .record(z.string(), z.string({ error: "metadata values must be strings" }), { error: "must be an object" })
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .refine((m) => JSON.stringify(m).length <= 16_384, { message: "at most 16 KiB" });
export const email = z.string({ error: "must be a string" }).max(320).email({ message: "must be an email address" });
export const url = z.string({ error: "must be a string" }).max(2048).url({ message: "must be a URL" });
export const isoDate = z
  .string({ error: "must be a string" })
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be an ISO 8601 date" });
export const obj = z.record(z.string(), z.unknown(), { error: "must be an object" });

const invalidLimit = { params: { error_code: "invalid_limit" } };
/** A paging number from the query string: integer within [min, max]; out of range → invalid_limit. */
export function pagingInt(min: number, max: number) {
  return z.preprocess(
    (v) => (typeof v === "string" && v.trim() !== "" ? Number(v) : v),
    z
      .number({ error: "must be a number" })
      .refine((n) => Number.isInteger(n) && n >= min && n <= max, { message: `must be an integer from ${min} to ${max}`, ...invalidLimit }),
  );
}
export const boolQuery = z.preprocess((v) => (v === "true" || v === "1" ? true : v === "false" || v === "0" ? false : v), bool);

/** https anywhere; http only on the developer's own machine (any port), which payments refuses in live. */
function isReturnUrl(u: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return false;
  }
  if (parsed.protocol === "https:") return true;
  return parsed.protocol === "http:" && (parsed.hostname === "localhost" || parsed.hostname === "127.0.0.1");
}
/**
 * Where a hosted page sends the buyer back (a link and a redirect in the buyer's browser): never `javascript:`,
 * `data:` or another scheme, and never plain http across the network.
 */
export const returnUrl = url.refine(isReturnUrl, { message: "must be an https URL (http://localhost or http://127.0.0.1 in sandbox only)" });
