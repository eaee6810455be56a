import { randomBytes, randomUUID } from "node:crypto";
import { z } from "zod";

/** Prefixes of the typed ids this platform issues; UUIDs where the spec says so. */
export const ID_PREFIXES = {
  org: "org",
  key: "key",
  transaction: "txn",
  hold: "hold",
  release: "rel",
  payout: "po",
  refund: "re",
  refundRequest: "rr",
  receipt: "rcpt",
  event: "evt",
  webhookEndpoint: "we",
  webhookDelivery: "whd",
  walletSession: "wals",
  walletTopup: "wtop",
  dispute: "dsp",
  kycSubmission: "kycs",
  fraudPolicy: "fpol",
  fraudEvaluation: "feval",
  alertConfig: "falrt",
  alertDelivery: "fald",
  invoice: "inv",
  invoicePayment: "invp",
  invoicePosting: "ilp",
  taxDocument: "taxdoc",
  taxGeneration: "taxgen",
  taxExport: "taxexp",
  request: "req",
  entry: "ent",
  operator: "opr",
} as const;

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** A new id: prefix + "_" + 24 random base36 characters. */
export function newId(prefix: (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES]): string {
  const bytes = randomBytes(24);
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 36];
  return `${prefix}_${out}`;
}

export function newUuid(): string {
  return randomUUID();
}

// Request ids are made on every request: draw their randomness from a pool, not one syscall-backed call each.
const REQUEST_ID_POOL_BYTES = 16 * 256;
let requestIdPool = Buffer.alloc(0);
let requestIdOffset = REQUEST_ID_POOL_BYTES;

/** `req_` + 32 hex characters. */
export function newRequestId(): string {
  if (requestIdOffset + 16 > requestIdPool.length) {
    requestIdPool = randomBytes(REQUEST_ID_POOL_BYTES);
    requestIdOffset = 0;
  }
  const id = requestIdPool.toString("hex", requestIdOffset, requestIdOffset + 16);
  requestIdOffset += 16;
  return `req_${id}`;
}

export const REQUEST_ID_RE = /^req_[0-9a-f]{32}$/;

/** Participant ids are the client's stable ids: 1–100 chars of [A-Za-z0-9_.:-]. */
export const ParticipantId = z.string({ error: "must be a string" }).regex(/^[A-Za-z0-9_.:-]{1,100}$/, { message: "1–100 characters of A-Z a-z 0-9 _ . : -" });

export const Uuid = z.string({ error: "must be a string" }).uuid({ message: "must be a UUID" });

/** Client replay keys (reference_id, idempotency_key). */
export const ReferenceId = z.string({ error: "must be a string" }).min(1).max(255);

export function prefixedId(prefix: string) {
  return z.string({ error: "must be a string" }).regex(new RegExp(`^${prefix}_[A-Za-z0-9]{1,64}$`), { message: `must be a ${prefix}_ id` });
}
