// Proves every log line carries the service name, and the request id and trace/span ids of the work in progress;
// and that secrets in headers and the row values of a PostgresError's detail never reach a line.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import postgres from "postgres";
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

describe("createLogger redaction", () => {
  it("writes no credential header, wherever the headers object sits", () => {
    const { log, lines } = captureLogger("gateway");
    const headers = {
      "x-api-key": "slk_test_SECRETSECRETSECRETSECRET0001",
      authorization: "Bearer SECRET-TOKEN-0002",
      cookie: "sid=SECRET-COOKIE-0003",
      "stripe-signature": "t=1,v1=SECRET-SIG-0004",
      "webhook-signature": "v1,SECRET-SIG-0005",
      "x-request-id": "req_visible",
    };
    log.info({ headers }, "top level");
    log.info({ req: { headers } }, "under req");
    log.info({ request: { headers } }, "under request");
    log.info({ res: { headers: { "set-cookie": "sid=SECRET-COOKIE-0006" } } }, "under res");
    log.info({ api_key: "slk_test_SECRETSECRETSECRETSECRET0007", password: "SECRET-0008" }, "top-level secrets");
    const text = JSON.stringify(lines);
    expect(lines).toHaveLength(5);
    expect(text).not.toMatch(/SECRET/);
    expect(text).toContain("req_visible");
  });

  it("drops a PostgresError's detail (row values), its own and its cause's, and keeps the rest", () => {
    const { log, lines } = captureLogger("payments");
    // postgres.js builds it from the server's error fields; its declared type has no constructor.
    const PgError = postgres.PostgresError as unknown as new (fields: Record<string, string>) => Error;
    const pgError = () =>
      new PgError({
        message: 'duplicate key value violates unique constraint "payers_email_key"',
        code: "23505",
        detail: "Key (email)=(jane@example.com) already exists.",
        constraint_name: "payers_email_key",
      });
    log.error({ err: pgError() }, "insert failed");
    log.error(pgError(), "as the first argument");
    log.warn({ error: pgError() }, "under error");
    log.error({ err: new Error("wrapped", { cause: pgError() }) }, "as a cause");
    const text = JSON.stringify(lines);
    expect(lines).toHaveLength(4);
    expect(text).not.toContain("jane@example.com");
    expect(lines[0]).toMatchObject({ err: { type: "PostgresError", code: "23505", constraint_name: "payers_email_key" } });
    expect(lines[0]?.["err"]).not.toHaveProperty("detail");
    // A plain object under `error` (an RPC error reply) keeps its shape.
    log.error({ error: { code: "internal_error", message: "x" } }, "service answered internal_error");
    expect(lines[4]).toMatchObject({ error: { code: "internal_error", message: "x" } });
    expect(lines[4]?.["error"]).not.toHaveProperty("type");
  });
});
