/**
 * The headers an event carries from the request that caused it: its request id and trace context, stored with
 * the outbox row so the published message continues the request's trace.
 */
import { NATS_HEADERS } from "@treasury/contracts";
import { requestContext } from "./context.ts";
import { injectTraceRecord } from "./telemetry.ts";

export function eventHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const stored: Record<string, string> = { ...extra };
  injectTraceRecord(stored);
  const requestId = requestContext.get()?.requestId;
  if (requestId !== undefined && stored[NATS_HEADERS.requestId] === undefined) stored[NATS_HEADERS.requestId] = requestId;
  return stored;
}
