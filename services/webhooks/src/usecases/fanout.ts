/**
 * Fan-out: each public event becomes one delivery row per matching active endpoint of the same org and
 * environment, in the consumer's transaction (committed before the message is acked). Internal events are
 * never delivered, and neither is an event its owner did not emit (ADR 0011).
 */
import { eventOwner, eventSubject, isPublicEventType, SANDBOX_TEST_EVENT_SOURCE, tenantOf, type EventEnvelope, type EventType } from "@treasury/contracts";
import { eventHeaders } from "@treasury/service-kit";
import type { Logger } from "pino";
import { webhookBodyParts } from "../domain/events.ts";
import type { FanOutStore } from "./ports.ts";

/** Why an event was not trusted: the metric's label. */
export type DropReason = "subject_mismatch" | "not_owner";

/** Where an event came from, and what to tell when it is dropped. */
export interface EventOrigin {
  /** The NATS subject it was published on, and the deployment's prefix of it. */
  subject: string;
  /** Its sequence in the EVENTS stream: the order of an ordered endpoint's deliveries. */
  streamSeq: number;
  prefix: string;
  log: Logger;
  dropped(reason: DropReason): void;
}

/**
 * Why an event may not be delivered, or undefined when it may. NATS lets only an event type's owner publish its
 * subject (EVENT_OWNERS), so the subject vouches for the publisher; the type and source inside the envelope are the
 * publisher's word, and must agree with the subject and the owner map. The sandbox test event is webhooks' own, of
 * any public type, in sandbox only.
 */
export function untrusted(evt: EventEnvelope, origin: Pick<EventOrigin, "subject" | "prefix">): DropReason | undefined {
  if (origin.subject !== eventSubject(origin.prefix, evt.type as EventType)) return "subject_mismatch";
  if (evt.source === eventOwner(evt.type)) return undefined;
  if (evt.source === SANDBOX_TEST_EVENT_SOURCE && !evt.livemode) return undefined;
  return "not_owner";
}

/**
 * `created` is told when rows were inserted, and whether some are for ordered endpoints (the workers are then
 * hinted; the rows are visible at commit). Each row
 * keeps the trace context of the consumer's work on the event (which continues the event's own), so the delivery's
 * HTTP request joins the trace of the request that caused the event.
 */
export async function fanOut(
  deliveries: FanOutStore,
  evt: EventEnvelope,
  origin: EventOrigin,
  maxAttempts: number,
  created: (ordered: boolean) => void = () => {},
): Promise<number> {
  if (!isPublicEventType(evt.type)) return 0;
  const reason = untrusted(evt, origin);
  if (reason !== undefined) {
    origin.log.warn({ event_id: evt.id, type: evt.type, source: evt.source, subject: origin.subject, reason }, "dropped an event its owner did not emit");
    origin.dropped(reason);
    return 0;
  }
  const { inserted, ordered } = await deliveries.insertDeliveries(
    tenantOf(evt),
    { id: evt.id, type: evt.type, body: webhookBodyParts(evt), traceHeaders: eventHeaders(), streamSeq: origin.streamSeq },
    maxAttempts,
  );
  if (inserted > 0) created(ordered > 0);
  return inserted;
}
