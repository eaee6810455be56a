/**
 * A rejection nobody handles or an exception nobody catches is a bug whose effects are unknown: the process logs
 * it through the service's logger (so it carries the service name and reaches the same place as every other line)
 * and exits with status 1 for its supervisor to restart it. Nothing is lost by exiting: every money movement is
 * an intent recorded before it is driven, and the reconciler and the outbox relay pick up where it stopped.
 */
import type { Logger } from "pino";

export interface CrashTarget {
  once(event: "unhandledRejection" | "uncaughtException", listener: (reason: unknown) => void): unknown;
  exit(code: number): never;
}

export function installCrashHandlers(log: Logger, target: CrashTarget = process): void {
  const crash = (what: string) => (reason: unknown) => {
    log.fatal({ err: reason instanceof Error ? reason : new Error(String(reason)) }, `${what}; exiting`);
    target.exit(1);
  };
  target.once("unhandledRejection", crash("unhandled promise rejection"));
  target.once("uncaughtException", crash("uncaught exception"));
}
