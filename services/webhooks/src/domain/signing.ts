/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): `v1,<base64 HMAC-SHA256(key, "id.ts.body")>`,
 * where the key is the base64-decoded part of the secret after `whsec_`. Several secrets (during a rotation)
 * give several signatures separated by spaces; receivers accept the message if any one verifies.
 */
import { createHmac } from "node:crypto";

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

export const USER_AGENT = "treasury-webhooks/1.0";

/** The headers of one attempt: Standard Webhooks plus the event type and the attempt number. */
export function attemptHeaders(
  d: { id: string; event_type: string; attempts: number; body: string },
  secrets: string[],
  timestampSec: number,
): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "webhook-id": d.id,
    "webhook-timestamp": String(timestampSec),
    "webhook-signature": signatureHeader(secrets, d.id, timestampSec, d.body),
    "X-Webhook-Event": d.event_type,
    "X-Webhook-Attempt": String(d.attempts),
  };
}
