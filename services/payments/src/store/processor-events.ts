/** SQL of received processor events: insert once, claim with a lease, record the outcome or the next attempt. */
import type postgres from "postgres";
import type { NewProcessorEvent, ProcessorEventRow } from "../domain/records.ts";
import type { ProcessorEventStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

/** Records an event; false when the processor's id was already recorded (a redelivery: nothing to do). */
export async function insertProcessorEvent(q: Q, e: NewProcessorEvent): Promise<boolean> {
  const rows = await q`
    insert into payments.processor_events (provider, event_id, type, livemode, payload, status, processed_at)
    values (${e.provider}, ${e.eventId}, ${e.type}, ${e.livemode}, ${q.json(e.payload as postgres.JSONValue)}, ${e.status},
            ${e.status === "ignored" ? new Date() : null})
    on conflict (provider, event_id) do nothing
    returning 1`;
  return rows.length === 1;
}

/**
 * Claims up to `limit` due events, oldest first, for `leaseMs`: each claim is one statement that commits at once,
 * so no transaction stays open while the event is worked on. Rows another worker holds are skipped.
 */
export async function claimDueEvents(q: Q, leaseMs: number, limit: number): Promise<ProcessorEventRow[]> {
  return q<ProcessorEventRow[]>`
    update payments.processor_events e
       set locked_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = e.attempts + 1
     where (e.provider, e.event_id) in (
       select provider, event_id from payments.processor_events
        where status = 'pending' and next_attempt_at <= now() and (locked_until is null or locked_until < now())
        order by received_at
        limit ${limit}
        for update skip locked)
    returning e.*`;
}

export async function markEventProcessed(q: Q, e: { provider: string; event_id: string }, outcome: string): Promise<void> {
  await q`
    update payments.processor_events
       set status = 'processed', outcome = ${outcome}, processed_at = now(), locked_until = null, last_error = null
     where provider = ${e.provider} and event_id = ${e.event_id}`;
}

/** The attempt failed: retried after `delayMs` (the lease is given back). */
export async function markEventRetry(q: Q, e: { provider: string; event_id: string }, error: string, delayMs: number): Promise<void> {
  await q`
    update payments.processor_events
       set last_error = ${error.slice(0, 1000)}, next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}), locked_until = null
     where provider = ${e.provider} and event_id = ${e.event_id} and status = 'pending'`;
}

/** Deletes up to `limit` finished (processed or ignored) events processed before `before`; answers how many. */
export async function deleteFinishedEvents(q: Q, before: Date, limit: number): Promise<number> {
  const rows = await q`
    delete from payments.processor_events
     where (provider, event_id) in (
       select provider, event_id from payments.processor_events
        where status <> 'pending' and processed_at < ${before}
        limit ${limit})
    returning 1`;
  return rows.length;
}

export function pgProcessorEventStore(sql: Sql): ProcessorEventStore {
  return {
    insert: (e) => insertProcessorEvent(sql, e),
    claimDue: (leaseMs, limit) => claimDueEvents(sql, leaseMs, limit),
    markProcessed: (e, outcome) => markEventProcessed(sql, e, outcome),
    markRetry: (e, error, delayMs) => markEventRetry(sql, e, error, delayMs),
    deleteFinished: (before, limit) => deleteFinishedEvents(sql, before, limit),
  };
}
