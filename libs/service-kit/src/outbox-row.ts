/**
 * An outbox row built in memory, for a service that writes its state change and its event in ONE statement
 * (a data-modifying CTE: `with done as (update … returning *) insert into <schema>.outbox … select … from done`)
 * instead of BEGIN + UPDATE + INSERT + COMMIT. The row carries exactly what `writeOutbox` stores: a fresh
 * `evt_` id, the prefix-free subject, `{data}` as payload, and the current trace context and request id as
 * headers. After such a statement committed with a row, `wakeOutboxRelay` wakes the local relay, as `withTx`
 * does after a transaction that called `writeOutbox`.
 */
import { eventSubject, NATS_HEADERS, newId } from "@treasury/contracts";
import { requestContext } from "./context.ts";
import type { NewEvent } from "./outbox-write.ts";
import { markOutboxWritten, signalCommitted } from "./outbox-signal.ts";
import { injectTraceRecord } from "./telemetry.ts";

export interface OutboxRowValues {
  id: string;
  org_id: string;
  livemode: boolean;
  type: string;
  subject: string;
  payload: { data: Record<string, unknown> };
  headers: Record<string, string>;
}

export function outboxRowValues(event: NewEvent, hdrs: Record<string, string> = {}): OutboxRowValues {
  const headers: Record<string, string> = { ...hdrs };
  injectTraceRecord(headers);
  const requestId = requestContext.get()?.requestId;
  if (requestId !== undefined && headers[NATS_HEADERS.requestId] === undefined) headers[NATS_HEADERS.requestId] = requestId;
  return {
    id: event.id ?? newId("evt"),
    org_id: event.org_id,
    livemode: event.livemode,
    type: event.type,
    subject: eventSubject("", event.type),
    payload: { data: event.data },
    headers,
  };
}

/** Wakes this process's relay of `schema` (call only after the statement that wrote the row committed). */
export function wakeOutboxRelay(schema: string): void {
  const token = {};
  markOutboxWritten(token, schema);
  signalCommitted(token);
}
