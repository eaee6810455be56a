/**
 * The per-request logger: the request's bindings (request id, then trace id and operation) are kept aside
 * and a real pino child is made only when a line at an enabled level is written. At the default production
 * level most requests write one line anyway; at warn or above most write none, and then cost no child at all.
 *
 * One is made per request, so it is cheap to make: plain prototype methods (no per-instance closures, which
 * the tsx runtime would also wrap in a naming call each) and bindings merged only when a child is made.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, Logger } from "pino";

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

export class LazyChildLogger {
  private real: Logger | undefined;
  /** Bindings set after construction, in order; merged over the first ones when the child is made. */
  private later: Bindings[] | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options?: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.parent.level;
  }

  set level(l: string) {
    this.materialise().level = l;
  }

  isLevelEnabled(level: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(level);
  }

  setBindings(more: Bindings): void {
    if (this.real) this.real.setBindings(more);
    else (this.later ??= []).push(more);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.materialise().child(bindings, options) as unknown as FastifyBaseLogger;
  }

  private materialise(): Logger {
    if (this.real === undefined) {
      let all = this.bindings;
      if (this.later !== undefined) all = Object.assign({}, all, ...this.later) as Bindings;
      this.real = this.parent.child(all, this.options);
    }
    return this.real;
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    const log = this.materialise();
    (log[level] as (...a: unknown[]) => void).apply(log, args);
  }

  fatal(...a: unknown[]): void {
    this.write("fatal", a);
  }
  error(...a: unknown[]): void {
    this.write("error", a);
  }
  warn(...a: unknown[]): void {
    this.write("warn", a);
  }
  info(...a: unknown[]): void {
    this.write("info", a);
  }
  debug(...a: unknown[]): void {
    this.write("debug", a);
  }
  trace(...a: unknown[]): void {
    this.write("trace", a);
  }
  silent(): void {}
}
