// Proves every log line carries the service name, and the request id and trace/span ids of the work in progress.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { beforeAll, describe, expect, it } from "vitest";
import { requestContext } from "./logger.ts";
import { tracer } from "./telemetry.ts";
import { captureLogger } from "./test-support.ts";

beforeAll(() => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});

describe("createLogger", () => {
  it("adds request_id, trace_id and span_id across awaits, and nothing outside a request", async () => {
    const { log, lines } = captureLogger("ledger");
    log.info("outside");
    let ids = { traceId: "", spanId: "" };
    await requestContext.run({ requestId: "req_abc" }, () =>
      tracer().startActiveSpan("work", async (span) => {
        ids = span.spanContext();
        // Across a macrotask: the ids must survive the hop, whatever its length.
        await new Promise((r) => setImmediate(r));
        log.info("inside");
        span.end();
      }),
    );
    expect(lines[0]).toMatchObject({ service: "ledger", level: "info", msg: "outside" });
    expect(lines[0]).not.toHaveProperty("request_id");
    expect(lines[0]).not.toHaveProperty("trace_id");
    expect(lines[1]).toMatchObject({ service: "ledger", msg: "inside", request_id: "req_abc", trace_id: ids.traceId, span_id: ids.spanId });
  });
});
