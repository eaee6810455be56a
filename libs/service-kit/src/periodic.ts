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
