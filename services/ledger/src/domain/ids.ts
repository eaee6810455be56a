/**
 * Time-ordered ids for the group-commit path: the same shape as `newId` (prefix + "_" + 24 base36
 * characters) but starting with the time and a per-process counter, so a batch's rows land at the right-hand
 * end of the id indexes instead of on random pages (fewer page splits and full-page WAL images per posting).
 * The last 10 characters stay random, so ids remain unguessable; their randomness comes from a pool refilled
 * a few kilobytes at a time, not from one system call per id.
 */
import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
const TIME_CHARS = 9;
const COUNTER_CHARS = 5;
const RANDOM_CHARS = 10;
const COUNTER_MOD = 36 ** COUNTER_CHARS;
/** Bytes per refill of the pool (enough for about 400 ids). */
const POOL_BYTES = 4096;
let counter = 0;
let lastNow = -1;
let timePart = "";
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomChars(n: number): string {
  if (poolOffset + n > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let out = "";
  // 256 % 36 != 0, so this is not perfectly uniform; like newId, it only needs to be unguessable.
  for (let j = 0; j < n; j++) out += ALPHABET[(pool[poolOffset + j] ?? 0) % 36];
  poolOffset += n;
  return out;
}

/** Prefixes of the ledger's time-ordered ids: postings, and bank lines, their imports, matches and templates. */
export type SortablePrefix = "txn" | "ent" | "evt" | "hold" | "bl" | "bimp" | "rm" | "tmpl";

/** One time-ordered id. */
export function sortableId(prefix: SortablePrefix, now: number = Date.now()): string {
  counter = (counter + 1) % COUNTER_MOD;
  if (now !== lastNow) {
    lastNow = now;
    timePart = now.toString(36).padStart(TIME_CHARS, "0").slice(-TIME_CHARS);
  }
  return `${prefix}_${timePart}${counter.toString(36).padStart(COUNTER_CHARS, "0")}${randomChars(RANDOM_CHARS)}`;
}

export function sortableIds(prefix: SortablePrefix, n: number, now: number = Date.now()): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(sortableId(prefix, now));
  return out;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids from clients are checked before they reach a uuid column, so a malformed one is "not found", not a 500. */
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}
