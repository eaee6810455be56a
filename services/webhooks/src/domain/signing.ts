/**
 * Standard Webhooks signing (https://www.standardwebhooks.com) of `id.timestamp.body`, in one of two schemes:
 * `v1,<base64 HMAC-SHA256(key, …)>` where the key is the base64-decoded part of the endpoint's secret after
 * `whsec_`, or `v1a,<base64 Ed25519 signature>` by the platform's signing key, whose public half is in the JWKS.
 * Several keys (during a rotation) give several signatures separated by spaces; receivers accept the message if
 * any one verifies. Ed25519 signatures name their keys in `webhook-signature-kid`, in the same order.
 */
import { createHmac, sign, type KeyObject } from "node:crypto";

export const SECRET_PREFIX = "whsec_";
/** Secret entropy: 24 random bytes (192 bits). */
export const SECRET_BYTES = 24;

/** A secret from random bytes (the caller supplies them, so this stays pure). */
export function secretFromBytes(bytes: Uint8Array): string {
  if (bytes.length !== SECRET_BYTES) throw new Error(`secretFromBytes: expected ${SECRET_BYTES} bytes, got ${bytes.length}`);
  return SECRET_PREFIX + Buffer.from(bytes).toString("base64");
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("webhook secret without the whsec_ prefix");
  return Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
}

/** One `v1,<base64>` signature of `id.timestamp.body`; timestamp in whole seconds since the epoch. */
export function signOne(secret: string, msgId: string, timestampSec: number, body: string): string {
  const mac = createHmac("sha256", secretKey(secret)).update(`${msgId}.${timestampSec}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The `webhook-signature` header value: one signature per secret, space-separated. */
export function signatureHeader(secrets: readonly string[], msgId: string, timestampSec: number, body: string): string {
  if (secrets.length === 0) throw new Error("signatureHeader: no secret to sign with");
  return secrets.map((s) => signOne(s, msgId, timestampSec, body)).join(" ");
}

export const SIGNATURE_SCHEMES = ["hmac_sha256", "ed25519"] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** A platform signing key as signing needs it: its id and its private half, opened in memory only. */
export interface Ed25519Signer {
  kid: string;
  privateKey: KeyObject;
}

/** One `v1a,<base64>` Ed25519 signature of `id.timestamp.body`. */
export function signOneEd25519(key: KeyObject, msgId: string, timestampSec: number, body: string): string {
  return `v1a,${sign(null, Buffer.from(`${msgId}.${timestampSec}.${body}`, "utf8"), key).toString("base64")}`;
}

/** What signs one attempt: the endpoint's secrets, or the platform's Ed25519 keys (active first). */
export type AttemptSigners = { scheme: "hmac_sha256"; secrets: readonly string[] } | { scheme: "ed25519"; keys: readonly Ed25519Signer[] };

/** The signature headers of one attempt: `webhook-signature`, and for Ed25519 the kids in `webhook-signature-kid`. */
export function signatureHeaders(signers: AttemptSigners, msgId: string, timestampSec: number, body: string): Record<string, string> {
  if (signers.scheme === "hmac_sha256") return { "webhook-signature": signatureHeader(signers.secrets, msgId, timestampSec, body) };
  if (signers.keys.length === 0) throw new Error("signatureHeaders: no Ed25519 key to sign with");
  return {
    "webhook-signature": signers.keys.map((k) => signOneEd25519(k.privateKey, msgId, timestampSec, body)).join(" "),
    "webhook-signature-kid": signers.keys.map((k) => k.kid).join(" "),
  };
}

export const USER_AGENT = "treasury-webhooks/1.0";

/** The headers of one attempt: Standard Webhooks plus the event type and the attempt number. */
export function attemptHeaders(
  d: { id: string; event_type: string; attempts: number; body: string },
  signers: AttemptSigners,
  timestampSec: number,
): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "webhook-id": d.id,
    "webhook-timestamp": String(timestampSec),
    ...signatureHeaders(signers, d.id, timestampSec, d.body),
    "X-Webhook-Event": d.event_type,
    "X-Webhook-Attempt": String(d.attempts),
  };
}
