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

/** Request and response headers that carry credentials or signatures: their values never reach a log line. */
const SECRET_HEADERS = ["authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie", "stripe-signature", "webhook-signature"];
/** Fields that name a secret wherever a log call puts them at the top level or one object down. */
const SECRET_FIELDS = ["api_key", "password", "secret", "token", "card_number", "cvc"];

const REDACT_PATHS = [...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`]), ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`])];

/**
 * Fields of a PostgresError that hold row values: `detail` names the conflicting key's value ("Key
 * (email)=(…) already exists"), `parameters` (debug builds) every bound value. The code, constraint and
 * table stay: they are what an operator needs to find the cause.
 */
const ROW_VALUE_FIELDS = ["detail", "parameters", "args"];

/**
 * pino's error serializer, without row values, for the error and every cause it carries. Anything else logged
 * under these names (an RPC error reply is a plain object) is written as it is.
 */
function serializeError(err: unknown): unknown {
  return err instanceof Error ? withoutRowValues(pino.stdSerializers.err(err), 0) : err;
}

/** Causes nest; a bound keeps a cyclic or absurdly deep chain from costing more than it is worth. */
const CAUSE_DEPTH_MAX = 8;

function withoutRowValues(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null || depth > CAUSE_DEPTH_MAX) return value;
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const f of ROW_VALUE_FIELDS) delete copy[f];
  if ("cause" in copy) copy["cause"] = withoutRowValues(copy["cause"], depth + 1);
  if (Array.isArray(copy["aggregateErrors"])) copy["aggregateErrors"] = copy["aggregateErrors"].map((e: unknown) => withoutRowValues(e, depth + 1));
  return copy;
}

export function createLogger(opts: { service: string; level?: string; destination?: DestinationStream }): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? "info",
    base: { service: opts.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Label levels by name: log shippers and humans read "error" more reliably than 50.
    formatters: { level: (label) => ({ level: label }) },
    mixin: correlationFields,
    // Removed, not masked: a masked value still tells a reader a key was there, which is of no use to them.
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    // `error` too: some call sites log a caught error under that name.
    serializers: { err: serializeError, error: serializeError },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
