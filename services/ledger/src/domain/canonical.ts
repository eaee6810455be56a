import * as crypto from "node:crypto";
import type { AccountRef, PostRequest } from "@treasury/contracts";

/**
 * Canonical JSON: object keys sorted, `undefined` members dropped, no whitespace. Two requests that mean the
 * same thing hash the same however their keys were ordered. Stored request hashes depend on this exact
 * output, so it must never change (canonical.test.ts pins it); it is written as one string-building pass
 * because every posting request is hashed.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("non-finite number in canonical JSON");
      return JSON.stringify(value);
    case "object":
      break;
    default:
      // bigint throws, as JSON.stringify does; functions and symbols become null.
      return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      const v: unknown = value[i];
      out += canonicalJson(v === undefined ? null : v);
    }
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  // Default sort order: UTF-16 code units, the same as comparing the keys with < and >.
  const keys = Object.keys(obj).sort();
  let out = "{";
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    if (!first) out += ",";
    first = false;
    out += `${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** One-shot `crypto.hash` where the runtime has it (Node ≥ 20.12): about half the cost of a Hash object. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

export function sha256Hex(text: string): string {
  return oneShot !== undefined ? oneShot("sha256", text, "hex") : crypto.createHash("sha256").update(text).digest("hex");
}

export function requestHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

function refJson(ref: AccountRef): string {
  if ("wallet_id" in ref) return `{"wallet_id":${JSON.stringify(ref.wallet_id)}}`;
  if ("participant_id" in ref) return `{"participant_id":${JSON.stringify(ref.participant_id)}}`;
  return ref.entity_id === undefined
    ? `{"system":${JSON.stringify(ref.system)}}`
    : `{"entity_id":${JSON.stringify(ref.entity_id)},"system":${JSON.stringify(ref.system)}}`;
}

/**
 * canonicalJson of a parsed posting request, written field by field in sorted key order (every posting request
 * is hashed, and the generic walk sorts the keys of every object on the way). The same string as
 * canonicalJson(req), which canonical.test.ts checks on generated requests.
 */
export function canonicalPostRequest(req: PostRequest): string {
  let out = "{";
  if (req.amount !== undefined) out += `"amount":${JSON.stringify(req.amount)},`;
  if (req.description !== undefined) out += `"description":${JSON.stringify(req.description)},`;
  if (req.effective_date !== undefined) out += `"effective_date":${JSON.stringify(req.effective_date)},`;
  out += `"holds_create":${canonicalJson(req.holds_create)},"holds_release":${canonicalJson(req.holds_release)},`;
  out += `"kind":${JSON.stringify(req.kind)},"livemode":${req.livemode ? "true" : "false"},`;
  if (req.metadata !== undefined) out += `"metadata":${canonicalJson(req.metadata)},`;
  out += `"org_id":${JSON.stringify(req.org_id)},"postings":[`;
  for (let i = 0; i < req.postings.length; i++) {
    const p = req.postings[i];
    if (p === undefined) continue;
    out += `${i > 0 ? "," : ""}{"amount":${JSON.stringify(p.amount)},"credit":${refJson(p.credit)},"debit":${refJson(p.debit)}}`;
  }
  out += `],"preconditions":[`;
  for (let i = 0; i < req.preconditions.length; i++) {
    const p = req.preconditions[i];
    if (p === undefined) continue;
    out += `${i > 0 ? "," : ""}{"available_gte":${JSON.stringify(p.available_gte)},"wallet":${refJson(p.wallet)}}`;
  }
  out += `],"reference_id":${JSON.stringify(req.reference_id)}`;
  if (req.refund !== undefined) out += `,"refund":${canonicalJson(req.refund)}`;
  if (req.result_extra !== undefined) out += `,"result_extra":${canonicalJson(req.result_extra)}`;
  if (req.sale !== undefined) out += `,"sale":${canonicalJson(req.sale)}`;
  return `${out}}`;
}

/** requestHash of a parsed posting request (the same hash, computed faster). */
export function postRequestHash(req: PostRequest): string {
  return sha256Hex(canonicalPostRequest(req));
}

/**
 * The hash a request with an `effective_date` was stored with before the date was part of the hash, or undefined
 * when it has none. A replay of such a transaction matches either; a new transaction's hash always has the date.
 */
export function postRequestHashWithoutDate(req: PostRequest): string | undefined {
  if (req.effective_date === undefined) return undefined;
  const { effective_date: _date, ...rest } = req;
  return postRequestHash(rest);
}
