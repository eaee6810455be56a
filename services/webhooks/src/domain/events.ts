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
 * The exact body every attempt sends: `{id, type, created_at, livemode, mode, sequence, data}`. Built once
 * when the delivery is created and stored, so retries and replays carry the same bytes.
 */
export function webhookBody(evt: Pick<EventEnvelope, "id" | "type" | "created_at" | "livemode" | "sequence" | "data">): string {
  return JSON.stringify({
    id: evt.id,
    type: evt.type,
    created_at: evt.created_at,
    livemode: evt.livemode,
    mode: evt.livemode ? "live" : "sandbox",
    sequence: evt.sequence,
    data: evt.data,
  });
}
