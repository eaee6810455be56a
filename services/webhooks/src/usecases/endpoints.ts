/** Endpoint management: list, create, update, delete, rotate_secret, test. */
import { randomBytes } from "node:crypto";
import { DomainError, newId, type Tenant } from "@treasury/contracts";
import { SealedValueError, type Sealer } from "@treasury/service-kit";
import { eventFilterProblems } from "../domain/events.ts";
import { presentEndpoint, type EndpointView } from "../domain/present.ts";
import type { EndpointRow, Ordering } from "../domain/records.ts";
import { attemptHeaders, SECRET_BYTES, secretFromBytes, type SignatureScheme } from "../domain/signing.ts";
import { checkUrlShape, isGuarded } from "../domain/url.ts";
import type { Deps } from "./deps.ts";
import type { EndpointPatch, WebhookHttp } from "./ports.ts";
import { attemptSigners, openSecrets, requireSealer, sealSecrets } from "./secrets.ts";

/** Endpoints per org and environment. */
export const ENDPOINTS_MAX = 100;
/** Time kept back from the caller's deadline so the test answer reaches it. */
const TEST_REPLY_MARGIN_MS = 500;

export function notFound(id: string): DomainError {
  return new DomainError("webhook_endpoint_not_found", `Webhook endpoint ${id} not found`, {
    hint: "POST /v1/webhooks {action: 'list'} shows this environment's endpoints",
  });
}

/**
 * What the `test` action reports when the endpoint's address is refused: nothing about the address or what answered
 * there, so the action cannot be used to probe a network.
 */
export const REFUSED_ADDRESS_ERROR = "endpoint address not allowed";

/** Checks a URL for this environment; guarded hosts (domain/url.ts) must also resolve to public addresses only. */
export async function checkUrl(http: WebhookHttp, raw: string, livemode: boolean, allowPrivateUrls: boolean): Promise<string> {
  const checked = checkUrlShape(raw, livemode, allowPrivateUrls);
  if (checked.resolveHost !== undefined) {
    const resolved = await http.resolveHost(checked.resolveHost);
    if (resolved === "blocked") throw new DomainError("invalid_webhook_url", "webhook URLs must not resolve to private, loopback or link-local addresses");
    if (resolved === "unresolved") throw new DomainError("invalid_webhook_url", `host ${checked.resolveHost} does not resolve`);
  }
  return checked.url.toString();
}

function checkEvents(events: readonly string[]): string[] {
  const problems = eventFilterProblems(events);
  if (problems.length > 0) {
    throw new DomainError("validation_error", `Invalid body: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`, { details: problems });
  }
  return [...new Set(events)];
}

/** Lists this environment's endpoints, newest first. Codes: none. */
export async function listEndpoints(deps: Deps, s: Tenant): Promise<EndpointView[]> {
  return (await deps.store.listEndpoints(s, ENDPOINTS_MAX)).map(presentEndpoint);
}

/**
 * Creates an endpoint and returns it with its secret, shown this once and stored only sealed. Every endpoint has
 * one, whatever its signature scheme: it signs while the scheme is `hmac_sha256`, so switching needs no new secret.
 * Codes: invalid_webhook_url, validation_error (events, too many endpoints), service_unavailable (no keys).
 */
export async function createEndpoint(
  deps: Deps,
  s: Tenant,
  body: {
    url: string;
    description?: string | undefined;
    events?: string[] | undefined;
    signature_scheme?: SignatureScheme | undefined;
    ordering?: Ordering | undefined;
  },
): Promise<EndpointView & { secret: string }> {
  const sealer = requireSealer(deps.sealer);
  const events = checkEvents(body.events ?? ["*"]);
  const url = await checkUrl(deps.http, body.url, s.livemode, deps.config.allowPrivateUrls);
  const secret = secretFromBytes(randomBytes(SECRET_BYTES));
  // The id is chosen here because the sealed secret is bound to it.
  const id = newId("we");
  const row = await deps.store.transaction(async (tx) => {
    // Serialises creates of one org and environment, so the count check cannot be raced past.
    await tx.lockEndpointCreates(s);
    if ((await tx.countEndpoints(s)) >= ENDPOINTS_MAX) {
      throw new DomainError("validation_error", `At most ${ENDPOINTS_MAX} webhook endpoints per environment`, {
        hint: "POST /v1/webhooks {action: 'delete', endpoint_id} removes one",
      });
    }
    return tx.insertEndpoint(s, {
      id,
      url,
      description: body.description ?? null,
      events,
      signature_scheme: body.signature_scheme ?? "hmac_sha256",
      ordering: body.ordering ?? "none",
      sealed: sealSecrets(sealer, id, secret, null),
    });
  });
  return { ...presentEndpoint(row), secret };
}

/**
 * Changes url, description, events, is_active, signature_scheme or ordering; the next attempt of every waiting
 * delivery follows the new scheme and ordering. Codes: webhook_endpoint_not_found, invalid_webhook_url, validation_error.
 */
export async function updateEndpoint(
  deps: Deps,
  s: Tenant,
  body: {
    endpoint_id: string;
    url?: string | undefined;
    description?: string | undefined;
    events?: string[] | undefined;
    is_active?: boolean | undefined;
    signature_scheme?: SignatureScheme | undefined;
    ordering?: Ordering | undefined;
  },
): Promise<EndpointView> {
  const patch: EndpointPatch = {};
  if (body.signature_scheme !== undefined) patch.signature_scheme = body.signature_scheme;
  if (body.ordering !== undefined) patch.ordering = body.ordering;
  if (body.events !== undefined) patch.events = checkEvents(body.events);
  if (body.url !== undefined) patch.url = await checkUrl(deps.http, body.url, s.livemode, deps.config.allowPrivateUrls);
  if (body.description !== undefined) patch.description = body.description;
  if (body.is_active !== undefined) patch.is_active = body.is_active;
  const row = await deps.store.updateEndpoint(s, body.endpoint_id, patch);
  if (!row) throw notFound(body.endpoint_id);
  return presentEndpoint(row);
}

/** Deletes an endpoint; its queued deliveries are failed when they come due. Codes: webhook_endpoint_not_found. */
export async function deleteEndpoint(deps: Deps, s: Tenant, id: string): Promise<{ id: string; deleted: true }> {
  if (!(await deps.store.softDeleteEndpoint(s, id))) throw notFound(id);
  return { id, deleted: true };
}

/**
 * A new secret; the previous one keeps signing beside it for the overlap (24 h), so receivers can switch
 * without losing a message. Both are stored sealed with the active key.
 * Codes: webhook_endpoint_not_found, service_unavailable (no keys).
 */
export async function rotateSecret(deps: Deps, s: Tenant, id: string): Promise<EndpointView & { secret: string; previous_secret_expires_at: string | null }> {
  const sealer = requireSealer(deps.sealer);
  const secret = secretFromBytes(randomBytes(SECRET_BYTES));
  const row = await deps.store.transaction(async (tx) => {
    // Locked: the secret it replaces is read, opened and sealed again as the previous one.
    const current = await tx.findEndpoint(s, id, { forUpdate: true });
    if (!current) throw notFound(id);
    const previous = previousOnRotation(deps, sealer, current);
    return tx.rotateSecret(s, id, sealSecrets(sealer, id, secret, previous), deps.config.rotationOverlapMs);
  });
  if (!row) throw notFound(id);
  return { ...presentEndpoint(row), secret, previous_secret_expires_at: row.previous_secret_expires_at?.toISOString() ?? null };
}

/**
 * The secret a rotation keeps signing beside the new one. When it cannot be opened (its key left the ring before
 * the row was resealed) nothing can sign with it anyway: the rotation goes ahead without a previous secret, which
 * is how such an endpoint recovers.
 */
function previousOnRotation(deps: Deps, sealer: Sealer, e: EndpointRow): string | null {
  try {
    return openSecrets(sealer, e).current;
  } catch (err) {
    if (!(err instanceof SealedValueError)) throw err;
    deps.log.warn({ endpoint_id: e.id, error: err.message }, "rotating a webhook secret whose key is not in the ring; no previous secret will sign");
    return null;
  }
}

/**
 * Sends one real signed `sandbox.test` POST now and reports what the endpoint answered; nothing is stored or
 * retried. An address the rules refuse (an endpoint stored before they changed, or a name that now resolves
 * privately) is reported as REFUSED_ADDRESS_ERROR only. Codes: webhook_endpoint_not_found, service_unavailable (no keys).
 */
export async function testEndpoint(
  deps: Deps,
  s: Tenant,
  id: string,
  deadline: number,
): Promise<{ delivered: boolean; status: number | null; response_time_ms: number; error?: string }> {
  const sealer = requireSealer(deps.sealer);
  const e = await deps.store.findEndpoint(s, id);
  if (!e) throw notFound(id);
  const now = deps.now();
  const msgId = newId("whd");
  const body = JSON.stringify({
    id: newId("evt"),
    type: "sandbox.test",
    created_at: now.toISOString(),
    livemode: s.livemode,
    mode: s.livemode ? "live" : "sandbox",
    sequence: 0,
    endpoint_id: e.id,
    data: { endpoint_id: e.id, message: "Test webhook" },
  });
  const ts = Math.floor(now.getTime() / 1000);
  const signers = await attemptSigners(sealer, deps.signingKeys, e, now);
  const headers = attemptHeaders({ id: msgId, event_type: "sandbox.test", attempts: 1, body }, signers, ts);
  const timeoutMs = Math.max(100, Math.min(deps.config.timeoutMs, deadline - Date.now() - TEST_REPLY_MARGIN_MS));
  const r = await deps.http.postOnce({ url: e.url, guarded: isGuarded(s.livemode, deps.config.allowPrivateUrls) }, headers, body, timeoutMs);
  if (r.blocked) return { delivered: false, status: null, response_time_ms: 0, error: REFUSED_ADDRESS_ERROR };
  const delivered = r.status !== null && r.status >= 200 && r.status < 300;
  return { delivered, status: r.status, response_time_ms: r.timeMs, ...(r.error !== null ? { error: r.error } : {}) };
}
