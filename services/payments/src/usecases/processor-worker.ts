/**
 * The processor-event worker's pass (its loop is jobs/processor-worker.ts): works on recorded processor events
 * after their webhook was answered. Each claim is a lease (not an open transaction), so the work itself may call
 * the ledger and the processor; a lease that runs out (the process working on it died) lets another pass take the
 * event again. A failed attempt is retried with a growing delay (capped), never dropped: the processor's money is
 * behind every event it handles.
 */
import type { Logger } from "pino";
import type { ProcessorEventRow } from "../domain/records.ts";
import type { PaymentsDeps } from "./deps.ts";
import { handleProcessorEvent, MalformedEvent } from "./processor-events.ts";
import { ProcessorRefused, ProcessorUnavailable } from "./ports.ts";

export interface ProcessorWorkOptions {
  leaseMs: number;
  batchMax: number;
}

const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 15 * 60_000;

/** 1 s, 2 s, 4 s … up to 15 min, by attempt. */
export function retryDelayMs(attempts: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

/** What is stored and logged of a failure: a message, never an object that could carry a request's headers. */
export function describe(err: unknown): string {
  if (err instanceof ProcessorRefused || err instanceof ProcessorUnavailable || err instanceof MalformedEvent) return `${err.name}: ${err.message}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

async function work(deps: PaymentsDeps, ev: ProcessorEventRow, log: Logger): Promise<boolean> {
  try {
    await deps.beforeProcessorWork();
    const outcome = await handleProcessorEvent(deps, ev);
    await deps.processorEvents.markProcessed(ev, outcome.slice(0, 1000));
    log.info({ event_id: ev.event_id, type: ev.type, outcome }, "processor event handled");
    return true;
  } catch (err) {
    const what = describe(err);
    if (err instanceof MalformedEvent) {
      log.error({ event_id: ev.event_id, type: ev.type, error: what }, "processor event is malformed; recorded, not retried");
      await deps.processorEvents.markProcessed(ev, `malformed: ${what}`.slice(0, 1000));
      return true;
    }
    const delay = retryDelayMs(ev.attempts);
    log.warn({ event_id: ev.event_id, type: ev.type, attempts: ev.attempts, retry_in_ms: delay, error: what }, "processor event not handled yet; retrying");
    await deps.processorEvents.markRetry(ev, what, delay);
    return false;
  }
}

/** One pass over due events; answers how many it finished. */
export async function workDueProcessorEvents(deps: PaymentsDeps, opts: ProcessorWorkOptions, log: Logger): Promise<number> {
  let done = 0;
  for (const ev of await deps.processorEvents.claimDue(opts.leaseMs, opts.batchMax)) {
    if (await work(deps, ev, log)) done++;
  }
  return done;
}
