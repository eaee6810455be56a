/**
 * Verifying a webhook delivery (Standard Webhooks): the signed content is `webhook-id.webhook-timestamp.body`,
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` (shared secret) and `v1a,<base64 Ed25519>`
 * (public keys from the JWKS at `GET /v1/webhooks/jwks`) signatures, any one of which verifies. A timestamp outside
 * the tolerance is refused, so a captured delivery cannot be replayed later. WebCrypto only: no dependency.
 */

/** An Ed25519 public key as the JWKS publishes it. */
export interface Ed25519Jwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid?: string;
  use?: string;
}

export interface Jwks {
  keys: Ed25519Jwk[];
}

/** Keys to verify `v1a` signatures with: a JWKS object, or a source that fetches one (`jwksFromUrl`). */
export interface JwksSource {
  keys(opts?: { refresh?: boolean }): Promise<Ed25519Jwk[]>;
}

export interface VerifyWebhookOptions {
  /** The raw body, exactly as received: parsing and re-serialising would change the signed bytes. */
  payload: string;
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The endpoint's `whsec_…` secret(s), for `v1` signatures; during a rotation pass both. */
  secret?: string | string[];
  /** Public keys, for `v1a` signatures. */
  jwks?: Jwks | JwksSource;
  /**
   * The receiving endpoint's id (`we_…`). The platform's Ed25519 key signs every receiver's deliveries, so a `v1a`
   * delivery is yours only when its body's `endpoint_id` is your endpoint's: with a JWKS this is required.
   */
  endpointId?: string;
  /** Default 300 s either way. */
  toleranceSeconds?: number;
  /** Unix milliseconds; a seam for tests. */
  now?: () => number;
}

export type WebhookVerificationReason = "missing_headers" | "timestamp_out_of_tolerance" | "no_verifying_signature" | "invalid_body" | "other_endpoint";

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** The delivered event: `{id, type, created_at, livemode, mode, data, sequence}`. */
export interface WebhookEvent {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
  [key: string]: unknown;
}

const encoder = new TextEncoder();

function header(headers: VerifyWebhookOptions["headers"], name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.entries(headers).find(([k]) => k.toLowerCase() === name);
  const v = found?.[1];
  return Array.isArray(v) ? v[0] : v;
}

function base64Bytes(s: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

async function verifiesHmac(secrets: string[], signature: Uint8Array<ArrayBuffer>, signed: Uint8Array<ArrayBuffer>): Promise<boolean> {
  for (const secret of secrets) {
    const raw = base64Bytes(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
    if (raw === undefined) continue;
    const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    // subtle.verify compares in constant time, unlike comparing two computed strings.
    if (await crypto.subtle.verify("HMAC", key, signature, signed)) return true;
  }
  return false;
}

async function verifiesEd25519(keys: Ed25519Jwk[], signature: Uint8Array<ArrayBuffer>, signed: Uint8Array<ArrayBuffer>): Promise<boolean> {
  for (const jwk of keys) {
    if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || (jwk.use !== undefined && jwk.use !== "sig")) continue;
    const key = await crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    if (await crypto.subtle.verify({ name: "Ed25519" }, key, signature, signed)) return true;
  }
  return false;
}

function signaturesOf(value: string, version: "v1" | "v1a"): Uint8Array<ArrayBuffer>[] {
  return value
    .split(" ")
    .map((token) => token.split(","))
    .filter(([v, sig]) => v === version && sig !== undefined)
    .map(([, sig]) => base64Bytes(sig!))
    .filter((b): b is Uint8Array<ArrayBuffer> => b !== undefined);
}

async function anySignatureVerifies(opts: VerifyWebhookOptions, signatureHeader: string, signed: Uint8Array<ArrayBuffer>): Promise<boolean> {
  if (opts.secret !== undefined) {
    const secrets = Array.isArray(opts.secret) ? opts.secret : [opts.secret];
    for (const sig of signaturesOf(signatureHeader, "v1")) if (await verifiesHmac(secrets, sig, signed)) return true;
  }
  if (opts.jwks !== undefined) {
    const v1a = signaturesOf(signatureHeader, "v1a");
    if (v1a.length === 0) return false;
    const source = isSource(opts.jwks) ? opts.jwks : staticJwks(opts.jwks);
    for (const refresh of [false, true]) {
      // A key published after the last fetch (a rotation) is looked for once more before giving up.
      const keys = await source.keys({ refresh });
      for (const sig of v1a) if (await verifiesEd25519(keys, sig, signed)) return true;
    }
  }
  return false;
}

/** Checks a delivery's signature and timestamp, and returns its event; throws `WebhookVerificationError` otherwise. */
export async function verifyWebhook(opts: VerifyWebhookOptions): Promise<WebhookEvent> {
  const id = header(opts.headers, "webhook-id");
  const timestamp = header(opts.headers, "webhook-timestamp");
  const signature = header(opts.headers, "webhook-signature");
  if (!id || !timestamp || !signature)
    throw new WebhookVerificationError("missing_headers", "webhook-id, webhook-timestamp and webhook-signature are required");
  if (opts.secret === undefined && opts.jwks === undefined) throw new TypeError("verifyWebhook needs a secret (v1) or a JWKS (v1a)");
  if (opts.jwks !== undefined && opts.endpointId === undefined)
    throw new TypeError("verifyWebhook with a JWKS needs endpointId: the platform's key signs every endpoint's deliveries");
  const nowSec = Math.floor((opts.now ?? Date.now)() / 1000);
  const tolerance = opts.toleranceSeconds ?? 300;
  const ts = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSec - ts) > tolerance) {
    throw new WebhookVerificationError("timestamp_out_of_tolerance", `webhook-timestamp ${timestamp} is more than ${tolerance} s from now`);
  }
  const signed = encoder.encode(`${id}.${timestamp}.${opts.payload}`);
  if (!(await anySignatureVerifies(opts, signature, signed))) throw new WebhookVerificationError("no_verifying_signature", "no signature verifies");
  let event: WebhookEvent;
  try {
    event = JSON.parse(opts.payload) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError("invalid_body", "the signed body is not JSON");
  }
  if (opts.endpointId !== undefined && event["endpoint_id"] !== opts.endpointId) {
    throw new WebhookVerificationError("other_endpoint", `the delivery was signed for endpoint ${String(event["endpoint_id"])}, not ${opts.endpointId}`);
  }
  return event;
}

function isSource(jwks: Jwks | JwksSource): jwks is JwksSource {
  return typeof jwks.keys === "function";
}

function staticJwks(jwks: Jwks): JwksSource {
  return { keys: () => Promise.resolve(jwks.keys) };
}

export interface JwksFromUrlOptions {
  fetch?: typeof fetch;
  /** How long fetched keys are used before fetching again. Default 10 minutes. */
  cacheMs?: number;
  /** The least time between two fetches a failed verification asks for, so forged deliveries cannot drive fetches. Default 30 s. */
  refreshMinMs?: number;
  now?: () => number;
}

/** Keys fetched from a JWKS URL (`<base>/v1/webhooks/jwks`), cached, and fetched again on an unknown signature. */
export function jwksFromUrl(url: string, options: JwksFromUrlOptions = {}): JwksSource {
  const fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const now = options.now ?? Date.now;
  const cacheMs = options.cacheMs ?? 600_000;
  const refreshMinMs = options.refreshMinMs ?? 30_000;
  let cached: { keys: Ed25519Jwk[]; at: number } | undefined;
  return {
    async keys({ refresh = false } = {}) {
      const age = cached === undefined ? Infinity : now() - cached.at;
      if (cached !== undefined && age < cacheMs && (!refresh || age < refreshMinMs)) return cached.keys;
      const res = await fetchFn(url, { headers: { accept: "application/json" } });
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
      const body = (await res.json()) as Partial<Jwks>;
      cached = { keys: Array.isArray(body.keys) ? body.keys : [], at: now() };
      return cached.keys;
    },
  };
}
