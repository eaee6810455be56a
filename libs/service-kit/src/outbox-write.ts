/** The writing side of the outbox: an event recorded in the caller's transaction (the relay publishes it later). */
import { eventSubject, NATS_HEADERS, newId } from "@treasury/contracts";
import type { EventType } from "@treasury/contracts";
import type postgres from "postgres";
import { requestContext } from "./context.ts";
import type { Tx } from "./db.ts";
import { markOutboxWritten } from "./outbox-signal.ts";
import { injectTraceRecord } from "./telemetry.ts";

export interface NewEvent {
  type: EventType;
  org_id: string;
  livemode: boolean;
  data: Record<string, unknown>;
  /** Defaults to a fresh `evt_` id; pass one to make the write itself idempotent. */
  id?: string;
}

/**
 * Records an event in the caller's transaction, so it exists if and only if the change commits. When the
 * transaction was run by `withTx`, the local relay is woken right after COMMIT (outbox-signal.ts); otherwise
 * the relay's short poll finds the row. The current trace context and request id are
 * stored with the row so the published message continues the trace of the request that caused it.
 */
export async function writeOutbox(tx: Tx, schema: string, event: NewEvent, hdrs: Record<string, string> = {}): Promise<string> {
  const id = event.id ?? newId("evt");
  const stored: Record<string, string> = { ...hdrs };
  injectTraceRecord(stored);
  const requestId = requestContext.get()?.requestId;
  if (requestId !== undefined && stored[NATS_HEADERS.requestId] === undefined) stored[NATS_HEADERS.requestId] = requestId;
  const payload = { data: event.data } as postgres.JSONValue;
  // The subject column is informational (prefix-free); the relay derives the real subject from `type`.
  await tx`
    insert into ${tx(`${schema}.outbox`)} (id, org_id, livemode, type, subject, payload, headers)
    values (${id}, ${event.org_id}, ${event.livemode}, ${event.type}, ${eventSubject("", event.type)},
            ${tx.json(payload)}, ${tx.json(stored)})`;
  markOutboxWritten(tx, schema);
  return id;
}
