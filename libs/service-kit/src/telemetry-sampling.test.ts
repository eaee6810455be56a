// Proves the default without a collector: spans are not recorded (nothing would receive them), yet every span
// has real ids, the request id and trace id reach log lines, and W3C context still crosses NATS headers.
import { headers } from "@nats-io/transport-node";
import { context, propagation, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { runInRequestContext } from "./context.ts";
import { requestContext } from "./logger.ts";
import { extractTraceContext, initTelemetry, injectTraceHeadersFrom, tracer, unsampledParentStaysUnsampled } from "./telemetry.ts";
import { captureLogger } from "./test-support.ts";

describe("initTelemetry without an exporter", () => {
  it("creates non-recording spans with real ids that propagate and reach the logs", async () => {
    delete process.env.OTEL_TRACES_SAMPLER;
    const t = initTelemetry({ service: "ledger" });
    const root = tracer().startSpan("root");
    expect(root.isRecording()).toBe(false);
    const sc = root.spanContext();
    expect(sc.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(sc.traceId).not.toBe("0".repeat(32));

    const h = headers();
    injectTraceHeadersFrom(trace.setSpan(extractTraceContext(undefined), root), h);
    expect(h.get("traceparent")).toBe(`00-${sc.traceId}-${sc.spanId}-00`);

    // The receiving side continues the same trace id in a child span, inside one request context.
    const parent = extractTraceContext(h);
    const child = tracer().startSpan("child", {}, parent);
    expect(child.spanContext().traceId).toBe(sc.traceId);
    const { log, lines } = captureLogger("ledger");
    await runInRequestContext("req_1", trace.setSpan(parent, child), async () => {
      // Across a macrotask: the context must survive the hop, whatever its length.
      await new Promise((r) => setImmediate(r));
      expect(requestContext.get()?.requestId).toBe("req_1");
      log.info("inside");
    });
    expect(lines[0]).toMatchObject({ request_id: "req_1", trace_id: sc.traceId, span_id: child.spanContext().spanId });
    child.end();
    root.end();
    await t.shutdown();
  });

  it("knows when an unsampled caller's span may stand in for a service's own (the sampler follows it)", async () => {
    const saved = process.env.OTEL_TRACES_SAMPLER;
    try {
      expect(unsampledParentStaysUnsampled()).toBe(false);
      for (const [sampler, follows] of [
        [undefined, true],
        ["always_off", true],
        ["parentbased_traceidratio", true],
        ["always_on", false],
        ["traceidratio", false],
      ] as const) {
        if (sampler === undefined) delete process.env.OTEL_TRACES_SAMPLER;
        else process.env.OTEL_TRACES_SAMPLER = sampler;
        // The SDK's shutdown leaves its globals registered; a fresh start needs them cleared.
        trace.disable();
        context.disable();
        propagation.disable();
        const t = initTelemetry({ service: "ledger" });
        expect({ sampler, follows: unsampledParentStaysUnsampled() }).toEqual({ sampler, follows });
        // What the answer stands for: under an unsampled remote parent, this SDK makes no recording span.
        const h = headers();
        h.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        expect(tracer().startSpan("server", {}, extractTraceContext(h)).isRecording()).toBe(!follows);
        await t.shutdown();
        expect(unsampledParentStaysUnsampled()).toBe(false);
      }
    } finally {
      if (saved === undefined) delete process.env.OTEL_TRACES_SAMPLER;
      else process.env.OTEL_TRACES_SAMPLER = saved;
    }
  });
});
