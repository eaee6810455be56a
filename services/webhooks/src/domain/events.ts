/** Event filters of endpoints and the webhook body built from an event envelope. */
import { isPublicEventType, type EventEnvelope, type ValidationDetail } from "@treasury/contracts";

export const ALL_EVENTS = "*";

/** Problems with an endpoint's `events` list: each entry is `*` or a public event type. */
export function eventFilterProblems(events: readonly string[]): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  if (events.length === 0) problems.push({ path: "events", message: 'must name at least one event type, or "*"' });
  events.forEach((e, i) => {
    if (e !== ALL_EVENTS && !isPublicEventType(e)) problems.push({ path: `events.${i}`, message: `unknown event type "${e}"` });
  });
  return problems;
}

export function matchesFilter(events: readonly string[], type: string): boolean {
  return events.includes(ALL_EVENTS) || events.includes(type);
}

/**
 * The exact body every attempt sends: `{id, type, created_at, livemode, mode, sequence, endpoint_id, data}`.
 * Built when the delivery is created and stored, so retries and replays carry the same bytes. `endpoint_id` names
 * the endpoint it is sent to: an Ed25519 signature is the platform's, the same for every receiver, so the signed
 * body must say whom it is for, or a delivery made for one endpoint would verify at another.
 */
export function webhookBody(evt: Pick<EventEnvelope, "id" | "type" | "created_at" | "livemode" | "sequence" | "data">, endpointId: string): string {
  return JSON.stringify({
    id: evt.id,
    type: evt.type,
    created_at: evt.created_at,
    livemode: evt.livemode,
    mode: evt.livemode ? "live" : "sandbox",
    sequence: evt.sequence,
    endpoint_id: endpointId,
    data: evt.data,
  });
}

/** Endpoint ids are `we_` and lowercase letters and digits (newId): spliced into a JSON string they need no escaping. */
const SPLICE = "we_SPLICE";

/**
 * One event's body around the endpoint id, as the two parts the fan-out joins with each endpoint's id in SQL
 * (`before || id || after`): one statement writes every endpoint's own body.
 */
export function webhookBodyParts(evt: Pick<EventEnvelope, "id" | "type" | "created_at" | "livemode" | "sequence" | "data">): { before: string; after: string } {
  const body = webhookBody(evt, SPLICE);
  const at = body.indexOf(`"endpoint_id":"${SPLICE}"`) + `"endpoint_id":"`.length;
  return { before: body.slice(0, at), after: body.slice(at + SPLICE.length) };
}
