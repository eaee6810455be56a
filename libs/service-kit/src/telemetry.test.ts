// Proves initTelemetry starts the SDK once per process (spans get real ids, W3C headers round-trip through
// NATS headers) and shuts it down only when its last user does.
import { headers } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { describe, expect, it, vi } from "vitest";
import { extractTraceContext, initTelemetry, injectTraceHeaders, tracer } from "./telemetry.ts";

describe("initTelemetry", () => {
  it("registers a provider, propagates through NATS headers, and is shared by several services", async () => {
    // Recorded spans without an exporter only when asked for (see the sampling test for the default).
    vi.stubEnv("OTEL_TRACES_SAMPLER", "always_on");
    const a = initTelemetry({ service: "ledger" });
    const b = initTelemetry({ service: "payments" });
    const h = headers();
    const sent = tracer().startActiveSpan("send", (span) => {
      injectTraceHeaders(h);
      span.end();
      return span.spanContext();
    });
    expect(sent.traceId).not.toBe("00000000000000000000000000000000");
    expect(h.get("traceparent")).toBe(`00-${sent.traceId}-${sent.spanId}-01`);

    const received = trace.getSpanContext(extractTraceContext(h));
    expect(received).toMatchObject({ traceId: sent.traceId, spanId: sent.spanId, isRemote: true });
    expect(trace.getSpanContext(extractTraceContext(undefined))).toBeUndefined();

    await a.shutdown();
    // Still started for b: new spans are still sampled.
    const stillOn = tracer().startSpan("after-a");
    expect(stillOn.isRecording()).toBe(true);
    stillOn.end();
    await b.shutdown();
    vi.unstubAllEnvs();
  });
});
