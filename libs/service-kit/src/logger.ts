import { isSpanContextValid, trace } from "@opentelemetry/api";
import { pino } from "pino";
import type { DestinationStream, Logger, LoggerOptions } from "pino";

import { requestContext } from "./context.ts";

export { requestContext };

/** Correlation fields computed per line, so code never has to thread them into log calls by hand. */
function correlationFields(): Record<string, string> {
  const fields: Record<string, string> = {};
  const ctx = requestContext.get();
  if (ctx) fields["request_id"] = ctx.requestId;
  const span = trace.getActiveSpan()?.spanContext();
  if (span && isSpanContextValid(span)) {
    fields["trace_id"] = span.traceId;
    fields["span_id"] = span.spanId;
  }
  return fields;
}

export function createLogger(opts: { service: string; level?: string; destination?: DestinationStream }): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? "info",
    base: { service: opts.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Label levels by name: log shippers and humans read "error" more reliably than 50.
    formatters: { level: (label) => ({ level: label }) },
    mixin: correlationFields,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
