/**
 * Fan-out: each public event becomes one delivery row per matching active endpoint of the same org and
 * environment, in the consumer's transaction (committed before the message is acked). Internal events are
 * never delivered.
 */
import { isPublicEventType, type EventEnvelope } from "@treasury/contracts";
import { eventHeaders, type Tx } from "@treasury/service-kit";
import { webhookBody } from "../domain/events.ts";
import { fanOutDeliveries } from "../store/deliveries.ts";

/**
 * `created` is told when rows were inserted (the workers are then hinted; the rows are visible at commit). Each row
 * keeps the trace context of the consumer's work on the event (which continues the event's own), so the delivery's
 * HTTP request joins the trace of the request that caused the event.
 */
export async function fanOut(tx: Tx, evt: EventEnvelope, maxAttempts: number, created: () => void = () => {}): Promise<number> {
  if (!isPublicEventType(evt.type)) return 0;
  const n = await fanOutDeliveries(
    tx,
    { orgId: evt.org_id, livemode: evt.livemode },
    { id: evt.id, type: evt.type, body: webhookBody(evt), traceHeaders: eventHeaders() },
    maxAttempts,
  );
  if (n > 0) created();
  return n;
}
