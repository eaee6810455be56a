/**
 * The processor-event worker: works on recorded processor events after their webhook was answered. A received
 * event wakes it at once; a poll finds events recorded by other replicas, events whose retry is due, and events
 * whose lease ran out because the process working on them died. Each claim is a lease (not an open transaction),
 * so the work itself may call the ledger and the processor. A failed attempt is retried with a growing delay
 * (capped), never dropped: the processor's money is behind every event it handles.
 */
import type { Logger } from "pino";
import { ProcessorRefused, ProcessorUnavailable } from "../adapters/stripe.ts";
import { claimDueEvents, markEventProcessed, markEventRetry, type ProcessorEventRow } from "../store/processor-events.ts";
import type { PaymentsDeps } from "./deps.ts";
import { handleProcessorEvent, MalformedEvent } from "./processor-events.ts";

export interface ProcessorWorkerOptions {
  pollMs: number;
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
function describe(err: unknown): string {
  if (err instanceof ProcessorRefused || err instanceof ProcessorUnavailable || err instanceof MalformedEvent) return `${err.name}: ${err.message}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

export class ProcessorWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private again = false;

  constructor(
    private readonly deps: PaymentsDeps,
    private readonly opts: ProcessorWorkerOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
  }

  /** Runs a pass now (or right after the one running): an event was just recorded. */
  wake(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /** One pass over due events; answers how many it finished. Tests call it directly. */
  async runOnce(): Promise<number> {
    let done = 0;
    for (const ev of await claimDueEvents(this.deps.sql, this.opts.leaseMs, this.opts.batchMax)) {
      if (await this.work(ev)) done++;
    }
    return done;
  }

  private async work(ev: ProcessorEventRow): Promise<boolean> {
    try {
      await this.deps.beforeProcessorWork();
      const outcome = await handleProcessorEvent(this.deps, ev);
      await markEventProcessed(this.deps.sql, ev, outcome.slice(0, 1000));
      this.log.info({ event_id: ev.event_id, type: ev.type, outcome }, "processor event handled");
      return true;
    } catch (err) {
      const what = describe(err);
      if (err instanceof MalformedEvent) {
        this.log.error({ event_id: ev.event_id, type: ev.type, error: what }, "processor event is malformed; recorded, not retried");
        await markEventProcessed(this.deps.sql, ev, `malformed: ${what}`.slice(0, 1000));
        return true;
      }
      const delay = retryDelayMs(ev.attempts);
      this.log.warn(
        { event_id: ev.event_id, type: ev.type, attempts: ev.attempts, retry_in_ms: delay, error: what },
        "processor event not handled yet; retrying",
      );
      await markEventRetry(this.deps.sql, ev, what, delay);
      return false;
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((err: unknown) => this.log.error({ error: describe(err) }, "processor event pass failed"))
        .finally(() => {
          this.running = undefined;
          const now = this.again;
          this.again = false;
          this.schedule(now ? 0 : this.opts.pollMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
