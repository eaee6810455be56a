/**
 * An HTTP request a service makes to the outside (a webhook delivery) as a CLIENT span that continues the trace
 * of the work that caused it, with the W3C `traceparent` header for the receiver. The cause's context comes as
 * stored headers (eventHeaders(), kept in a row), since the request often runs long after that work ended.
 */
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Attributes } from "@opentelemetry/api";
import { extractTraceRecord, injectTraceRecord, tracer } from "./telemetry.ts";

export interface OutgoingHttp {
  /** Span name, e.g. `webhook POST`. */
  name: string;
  method: string;
  url: string;
  /** The trace headers stored with the work that caused this request (empty: a new trace). */
  cause: Record<string, string>;
}

export interface OutgoingHttpResult {
  /** The response status; null when no response came (refused, timed out, blocked). */
  status: number | null;
  error: string | null;
}

/**
 * Runs `send` inside the request's span; `send` adds the headers it is given to the request. The span records the
 * status code and fails on no response or a status of 400 or more. The URL's query and credentials stay out of it.
 */
export async function traceOutgoingHttp<R extends OutgoingHttpResult>(
  req: OutgoingHttp,
  send: (traceHeaders: Record<string, string>) => Promise<R>,
): Promise<R> {
  const parent = extractTraceRecord(req.cause);
  const span = tracer().startSpan(req.name, { kind: SpanKind.CLIENT, attributes: { "http.request.method": req.method, ...urlAttributes(req.url) } }, parent);
  const headers: Record<string, string> = {};
  injectTraceRecord(headers, trace.setSpan(parent, span));
  try {
    const result = await send(headers);
    if (result.status !== null) span.setAttribute("http.response.status_code", result.status);
    if (result.status === null || result.status >= 400)
      span.setStatus({ code: SpanStatusCode.ERROR, ...(result.error === null ? {} : { message: result.error }) });
    return result;
  } catch (err) {
    span.recordException(err instanceof Error ? err : new Error(String(err)));
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** Where the request goes, without its query or credentials (they may carry a receiver's secrets). */
function urlAttributes(raw: string): Attributes {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return {};
  }
  return {
    "url.scheme": url.protocol.replace(/:$/, ""),
    "server.address": url.hostname,
    "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    "url.path": url.pathname,
  };
}
