/**
 * Work a service repeats on an interval while it runs (its reconciler's passes): started with the service,
 * stopped on shutdown after the pass in progress ends. A pass that fails is logged and the next one runs on time;
 * passes never overlap. The timer does not keep the process alive.
 */
import type { Logger } from "pino";

export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly opts: { name: string; intervalMs: number; log: Logger; run: () => Promise<unknown> }) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.opts
        .run()
        .then(() => undefined)
        .catch((err: unknown) => this.opts.log.error({ err }, `${this.opts.name} pass failed`))
        .finally(() => this.schedule());
    }, this.opts.intervalMs);
    this.timer.unref();
  }
}

/**
 * A service's reconciler: one pass that re-drives what a crash or a timeout left between the steps of its intents,
 * run every `intervalMs` while the service runs and on demand (runOnce: tests). Every service with intents has one,
 * built from its own pass.
 */
export class Reconciler {
  private readonly loop: PeriodicTask;

  constructor(private readonly opts: { intervalMs: number; log: Logger; pass: () => Promise<number> }) {
    this.loop = new PeriodicTask({ name: "reconciler", intervalMs: opts.intervalMs, log: opts.log, run: opts.pass });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass; answers how many intents it moved on. */
  runOnce(): Promise<number> {
    return this.opts.pass();
  }
}

/**
 * One reconciler step: drives each row a pass found stuck. A row that fails is logged (under `idField`, the name
 * an on-call engineer searches the logs by, with the error's message) and left for the next pass, so one stuck row never stops the others.
 * Answers how many were driven.
 */
export async function driveEach<R extends { id: string }>(
  log: Logger,
  what: { noun: string; idField: string },
  rows: readonly R[],
  drive: (row: R) => Promise<{ status: string }>,
): Promise<number> {
  let driven = 0;
  for (const row of rows) {
    try {
      const done = await drive(row);
      log.info({ [what.idField]: row.id, status: done.status }, `reconciler drove a ${what.noun}`);
      driven++;
    } catch (err) {
      // The message only: an error object from a client (a card processor's, say) can carry a request's headers.
      const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      log.warn({ error, [what.idField]: row.id }, `reconciler could not drive a ${what.noun} yet`);
    }
  }
  return driven;
}
