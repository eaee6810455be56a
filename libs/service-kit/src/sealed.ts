/**
 * Field-level encryption for personal and banking data at rest (AES-256-GCM), with a key ring so keys rotate.
 *
 * A sealed value is text: `v1.<key id>.<iv>.<ciphertext+tag>` (base64url parts). It names the key that sealed
 * it, so a ring holding the old and the new key opens every row while new writes use the active key; a row is
 * moved to the active key by opening and sealing it again (`needsReseal` says which rows to move). The optional
 * associated data binds a value to where it lives (a table and row id): a ciphertext copied to another row does
 * not open there. Errors never carry plaintext or key material.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { ConfigError } from "./config.ts";

const VERSION = "v1";
const ALGORITHM = "aes-256-gcm";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Key ids appear inside sealed values and configuration: short, and free of the separators those use. */
const KEY_ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const B64URL_RE = /^[A-Za-z0-9_-]*$/;
/** A ring is configuration, not a key store: a handful of keys (the active one and those being retired). */
const RING_SIZE_MAX = 16;

/** A value could not be sealed or opened: unknown key id, tampered or malformed value, wrong associated data. */
export class SealedValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealedValueError";
  }
}

/** The keys a process may open with, and the one it seals with. */
export interface KeyRing {
  readonly activeKeyId: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

/**
 * Parses `kid1:base64key,kid2:base64key` (each key 32 bytes, standard or url-safe base64). The active key is
 * `activeKeyId`, or the only key when the ring has one. Throws with the problem, never with a key.
 */
export function parseKeyRing(spec: string, activeKeyId?: string): KeyRing {
  const keys = new Map<string, Buffer>();
  const entries = spec
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  if (entries.length === 0) throw new SealedValueError("key ring is empty: expected kid:base64key[,kid:base64key…]");
  if (entries.length > RING_SIZE_MAX) throw new SealedValueError(`key ring has more than ${RING_SIZE_MAX} keys`);
  for (const [i, entry] of entries.entries()) {
    const colon = entry.indexOf(":");
    const kid = colon < 0 ? "" : entry.slice(0, colon);
    if (!KEY_ID_RE.test(kid)) throw new SealedValueError(`key ring entry ${i + 1}: key id must be 1–32 characters of A-Z a-z 0-9 _ -`);
    if (keys.has(kid)) throw new SealedValueError(`key ring entry ${i + 1}: duplicate key id "${kid}"`);
    const key = Buffer.from(entry.slice(colon + 1), "base64");
    if (key.length !== KEY_BYTES) throw new SealedValueError(`key ring entry ${i + 1} ("${kid}"): key must be ${KEY_BYTES} bytes of base64`);
    keys.set(kid, key);
  }
  const active = activeKeyId ?? (keys.size === 1 ? [...keys.keys()][0] : undefined);
  if (active === undefined) throw new SealedValueError("key ring has several keys: name the active one");
  if (!keys.has(active)) throw new SealedValueError(`active key id "${active}" is not in the key ring`);
  return { activeKeyId: active, keys };
}

/** A fresh ring entry `kid:base64key` for configuration (the dev stack generates one on first start). */
export function generateKeyRingEntry(kid: string): string {
  if (!KEY_ID_RE.test(kid)) throw new SealedValueError("key id must be 1–32 characters of A-Z a-z 0-9 _ -");
  return `${kid}:${randomBytes(KEY_BYTES).toString("base64")}`;
}

/** The key id a sealed value names, or undefined when the text is not a sealed value. */
export function sealedKeyId(sealed: string): string | undefined {
  const parts = sealed.split(".");
  return parts.length === 4 && parts[0] === VERSION && KEY_ID_RE.test(parts[1] ?? "") ? parts[1] : undefined;
}

/** Seals and opens text with a key ring. */
export class Sealer {
  private readonly ring: KeyRing;

  constructor(ring: KeyRing) {
    this.ring = ring;
  }

  get activeKeyId(): string {
    return this.ring.activeKeyId;
  }

  /** Seals with the active key; `aad` (associated data) must be given again to open. */
  seal(plaintext: string, aad = ""): string {
    const kid = this.ring.activeKeyId;
    const key = this.keyFor(kid);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(kid, aad));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, kid, iv.toString("base64url"), body.toString("base64url")].join(".");
  }

  /** Opens a value sealed by any key of the ring with the same associated data; throws SealedValueError otherwise. */
  open(sealed: string, aad = ""): string {
    const parts = sealed.split(".");
    const [version, kid, ivText, bodyText] = parts;
    if (parts.length !== 4 || version !== VERSION || kid === undefined || ivText === undefined || bodyText === undefined) {
      throw new SealedValueError("not a sealed value");
    }
    if (!B64URL_RE.test(ivText) || !B64URL_RE.test(bodyText)) throw new SealedValueError("sealed value is malformed");
    const key = this.keyFor(kid);
    const iv = Buffer.from(ivText, "base64url");
    const body = Buffer.from(bodyText, "base64url");
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SealedValueError("sealed value is malformed");
    const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(kid, aad));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new SealedValueError(`sealed value does not authenticate with key "${kid}" (tampered, or sealed for other data)`);
    }
  }

  /** True when the value was sealed by a key other than the active one: open and seal it again to rotate it. */
  needsReseal(sealed: string): boolean {
    return sealedKeyId(sealed) !== this.ring.activeKeyId;
  }

  /** JSON convenience: seals `JSON.stringify(value)`. */
  sealJson(value: unknown, aad = ""): string {
    return this.seal(JSON.stringify(value), aad);
  }

  openJson<T>(sealed: string, aad = ""): T {
    return JSON.parse(this.open(sealed, aad)) as T;
  }

  private keyFor(kid: string): Buffer {
    const key = this.ring.keys.get(kid);
    if (key === undefined) throw new SealedValueError(`no key "${kid}" in the key ring`);
    return key;
  }
}

/** The key id is authenticated too: a value relabelled with another key id fails even if that key existed. */
function associatedData(kid: string, aad: string): Buffer {
  return Buffer.from(`${VERSION}.${kid}.${aad}`, "utf8");
}

/**
 * A service's key ring from its `PII_KEYS` / `PII_ACTIVE_KEY_ID` settings: undefined when none is set (the service
 * starts and refuses what needs the keys), a ConfigError naming the setting when it is malformed. The ring's
 * messages name entries and key ids, never key material.
 */
export function piiKeyRing(cfg: { PII_KEYS?: string | undefined; PII_ACTIVE_KEY_ID?: string | undefined }): KeyRing | undefined {
  if (cfg.PII_KEYS === undefined) return undefined;
  try {
    return parseKeyRing(cfg.PII_KEYS, cfg.PII_ACTIVE_KEY_ID);
  } catch (e) {
    if (e instanceof SealedValueError) throw new ConfigError([`PII_KEYS: ${e.message}`]);
    throw e;
  }
}
