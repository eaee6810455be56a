/** Delivery log and manual re-sends: deliveries, retry, replay. */
import { DomainError, type Tenant } from "@treasury/contracts";
import { presentDelivery, type DeliveryView } from "../domain/present.ts";
import type { DeliveryRow, DeliveryStatus } from "../domain/records.ts";
import type { Deps } from "./deps.ts";
import { notFound as endpointNotFound } from "./endpoints.ts";

export const DELIVERIES_PAGE_DEFAULT = 20;
/** Deliveries one `replay {endpoint_id, since}` re-queues. */
export const REPLAY_BATCH_MAX = 1_000;

function deliveryNotFound(id: string): DomainError {
  return new DomainError("webhook_delivery_not_found", `Webhook delivery ${id} not found`, {
    hint: "POST /v1/webhooks {action: 'deliveries', endpoint_id} lists this environment's deliveries",
  });
}

/** Newest first, filtered by endpoint, event type and status. Codes: webhook_endpoint_not_found. */
export async function listDeliveries(
  deps: Deps,
  s: Tenant,
  q: { endpoint_id?: string | undefined; event_type?: string | undefined; status?: DeliveryStatus | undefined; limit?: number | undefined },
): Promise<DeliveryView[]> {
  if (q.endpoint_id !== undefined && !(await deps.store.findEndpoint(s, q.endpoint_id))) throw endpointNotFound(q.endpoint_id);
  const rows = await deps.store.listDeliveries(s, {
    ...(q.endpoint_id !== undefined ? { endpointId: q.endpoint_id } : {}),
    ...(q.event_type !== undefined ? { eventType: q.event_type } : {}),
    ...(q.status !== undefined ? { status: q.status } : {}),
    limit: q.limit ?? DELIVERIES_PAGE_DEFAULT,
  });
  return rows.map(presentDelivery);
}

function inFlight(d: DeliveryRow, now: Date): boolean {
  return d.lease_until !== null && d.lease_until > now;
}

/**
 * Sends a failed (or waiting) delivery again now, with the same webhook-id and body. A delivered one is a 409
 * (use replay); one never attempted or in flight is already on its way and is returned as it is.
 * Codes: webhook_delivery_not_found, invalid_state_transition.
 */
export async function retryDelivery(deps: Deps, s: Tenant, id: string): Promise<DeliveryView> {
  return deps.store.transaction(async (tx) => {
    const d = await tx.findDelivery(s, id, { forUpdate: true });
    if (!d) throw deliveryNotFound(id);
    if (d.status === "delivered") {
      throw new DomainError("invalid_state_transition", "Delivery was already delivered; replay sends it again", {
        hint: "POST /v1/webhooks {action: 'replay', delivery_id}",
        extra: { status: d.status },
      });
    }
    if (d.status === "pending" || inFlight(d, deps.now())) return presentDelivery(d);
    const row = await tx.makeDueNow(s, id, 1);
    return presentDelivery(row ?? d);
  });
}

/** One delivery sent again now, whatever its status; one never attempted or in flight is returned as it is. */
async function replayOne(deps: Deps, s: Tenant, id: string): Promise<DeliveryView> {
  return deps.store.transaction(async (tx) => {
    const d = await tx.findDelivery(s, id, { forUpdate: true });
    if (!d) throw deliveryNotFound(id);
    if ((d.status === "pending" && d.attempts === 0) || inFlight(d, deps.now())) return presentDelivery(d);
    const row = await tx.makeDueNow(s, id, 1);
    return presentDelivery(row ?? d);
  });
}

/** `since` as a date the database can compare (years 1 to 9999). */
function sinceDate(since: string): Date {
  const date = new Date(since);
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) {
    throw new DomainError("validation_error", "Invalid body: since: must be a date between years 1 and 9999", {
      details: [{ path: "since", message: "out of range" }],
    });
  }
  return date;
}

/**
 * `replay {delivery_id}`: sends one delivery again whatever its status (same webhook-id, same body).
 * `replay {endpoint_id, since}`: re-queues every failed delivery of the endpoint created since then.
 * Codes: webhook_delivery_not_found, webhook_endpoint_not_found, validation_error.
 */
export async function replay(
  deps: Deps,
  s: Tenant,
  body: { delivery_id?: string | undefined; endpoint_id?: string | undefined; since?: string | undefined },
): Promise<DeliveryView | { endpoint_id: string; since: string; replayed: number; delivery_ids: string[] }> {
  if (body.delivery_id !== undefined) {
    if (body.endpoint_id !== undefined || body.since !== undefined) {
      throw new DomainError("validation_error", "Invalid body: give delivery_id, or endpoint_id with since, not both", {
        details: [{ path: "delivery_id", message: "not allowed together with endpoint_id/since" }],
      });
    }
    return replayOne(deps, s, body.delivery_id);
  }
  const missing = [
    ...(body.endpoint_id === undefined ? [{ path: "endpoint_id", message: "required (or give delivery_id)" }] : []),
    ...(body.since === undefined ? [{ path: "since", message: "required with endpoint_id" }] : []),
  ];
  if (body.endpoint_id === undefined || body.since === undefined) {
    throw new DomainError("validation_error", `Invalid body: ${missing.map((m) => `${m.path}: ${m.message}`).join("; ")}`, { details: missing });
  }
  const endpointId = body.endpoint_id;
  const since = sinceDate(body.since);
  if (!(await deps.store.findEndpoint(s, endpointId))) throw endpointNotFound(endpointId);
  const ids = await deps.store.transaction((tx) => tx.replayFailedSince(s, endpointId, since, REPLAY_BATCH_MAX));
  return { endpoint_id: endpointId, since: since.toISOString(), replayed: ids.length, delivery_ids: ids };
}
