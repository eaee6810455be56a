/**
 * Time-ordered ids for the group-commit path: the same shape as `newId` (prefix + "_" + 24 base36
 * characters) but starting with the time and a per-process counter, so a batch's rows land at the right-hand
 * end of the id indexes instead of on random pages (fewer page splits and full-page WAL images per posting),
 * and one random draw serves a whole batch. The last 10 characters stay random, so ids remain unguessable.
 */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
const TIME_CHARS = 9;
const COUNTER_CHARS = 5;
const RANDOM_CHARS = 10;
const COUNTER_MOD = 36 ** COUNTER_CHARS;
let counter = 0;

export function sortableIds(prefix: "txn" | "ent" | "evt", n: number, now: number = Date.now()): string[] {
  const time = now.toString(36).padStart(TIME_CHARS, "0").slice(-TIME_CHARS);
  const bytes = randomBytes(n * RANDOM_CHARS);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    counter = (counter + 1) % COUNTER_MOD;
    let rnd = "";
    for (let j = 0; j < RANDOM_CHARS; j++) rnd += ALPHABET[(bytes[i * RANDOM_CHARS + j] ?? 0) % 36];
    out.push(`${prefix}_${time}${counter.toString(36).padStart(COUNTER_CHARS, "0")}${rnd}`);
  }
  return out;
}
