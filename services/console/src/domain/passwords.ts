/**
 * Operator passwords, hashed with scrypt from node:crypto: a memory-hard function built into Node and maintained
 * with it, so no native add-on has to build in the image (ADR 0021). The stored form names its parameters, so
 * they can be raised later and older hashes still verify.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

/** OWASP's recommended minimum for scrypt: N = 2^17, r = 8, p = 1 (128 MiB and a few hundred ms per hash). */
const LOG2_N = 17;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** scrypt needs 128 × N × r bytes (128 MiB here), above Node's default cap of 32 MiB. */
const MAXMEM_BYTES = 160 * 1024 * 1024;

export const PASSWORD_LENGTH_MIN = 12;
export const PASSWORD_LENGTH_MAX = 1_024;

function derive(password: string, salt: Buffer, opts: ScryptOptions, keyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFC"), salt, keyBytes, opts, (err, key) => (err === null ? resolve(key) : reject(err)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, { N: 2 ** LOG2_N, r: BLOCK_SIZE, p: PARALLELISM, maxmem: MAXMEM_BYTES }, KEY_BYTES);
  return ["scrypt", LOG2_N, BLOCK_SIZE, PARALLELISM, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Whether `password` is the one `stored` was made from; false for a malformed hash. Constant time in the key. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, logN, r, p, salt, key] = stored.split("$");
  if (scheme !== "scrypt" || logN === undefined || r === undefined || p === undefined || salt === undefined || key === undefined) return false;
  const expected = Buffer.from(key, "base64url");
  const opts = { N: 2 ** Number(logN), r: Number(r), p: Number(p), maxmem: MAXMEM_BYTES };
  const actual = await derive(password, Buffer.from(salt, "base64url"), opts, expected.length);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash of a password nobody has: an unknown address is checked against it, so a sign-in takes as long whether
 * the account exists or not.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString("base64url"));
  return decoy;
}
