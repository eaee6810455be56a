import { context, ProxyTracerProvider, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import type { Context, TextMapGetter, TextMapSetter, Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { core, NodeSDK } from "@opentelemetry/sdk-node";
import { AlwaysOffSampler, BatchSpanProcessor, NoopSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { MsgHdrs } from "@nats-io/transport-node";
import { KitContextManager, noteContextManagerRegistered } from "./context.ts";

/**
 * NATS headers always carry W3C trace context (DESIGN: Messaging), whatever global propagator a process or a
 * test has registered, so the kit uses its own propagator instance for them.
 */
const w3c = new core.W3CTraceContextPropagator();

const natsSetter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

const natsGetter: TextMapGetter<MsgHdrs> = {
  // MsgHdrs.get answers "" for a missing header; the propagator expects undefined.
  get: (carrier, key) => carrier.get(key) || undefined,
  keys: (carrier) => carrier.keys(),
};

const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

const recordGetter: TextMapGetter<Record<string, string>> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
};

interface SdkState {
  sdk: NodeSDK;
  users: number;
  /** The sampler never records a span whose remote parent is unsampled (always-off, or parent-based). */
  unsampledParentStaysUnsampled: boolean;
}
let state: SdkState | undefined;

/** True when something (usually a test with an in-memory exporter) already registered a tracer provider. */
function providerAlreadyRegistered(): boolean {
  const provider = trace.getTracerProvider();
  // The global proxy answers undefined while it has no delegate, i.e. nothing was registered.
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer("probe") !== undefined;
}

function otlpTracesUrl(endpoint: string): string {
  // OTEL_EXPORTER_OTLP_ENDPOINT is the collector's base URL; the traces signal lives under /v1/traces.
  const base = endpoint.replace(/\/+$/, "");
  return base.endsWith("/v1/traces") ? base : `${base}/v1/traces`;
}

/**
 * Starts the OpenTelemetry SDK once per process. Several services in one process share the SDK; the last
 * shutdown ends it.
 *
 * Sampling: with an OTLP endpoint, the SDK's default or OTEL_TRACES_SAMPLER (e.g. parentbased_traceidratio)
 * decides. Without an endpoint nothing would receive a recorded span, so spans are not recorded unless
 * OTEL_TRACES_SAMPLER asks for it; they still get real trace and span ids, which log lines carry and NATS
 * headers propagate (flag 00), so one request is still one trace id across services.
 */
export function initTelemetry(opts: { service: string; otlpEndpoint?: string | undefined }): { shutdown(): Promise<void> } {
  if (!state && providerAlreadyRegistered()) return { shutdown: async () => {} };
  if (!state) {
    const processor = opts.otlpEndpoint ? new BatchSpanProcessor(new OTLPTraceExporter({ url: otlpTracesUrl(opts.otlpEndpoint) })) : new NoopSpanProcessor();
    const samplerFromEnv = process.env.OTEL_TRACES_SAMPLER;
    const contextManager = new KitContextManager();
    const sdk = new NodeSDK({
      serviceName: opts.service,
      contextManager,
      ...(opts.otlpEndpoint || samplerFromEnv ? {} : { sampler: new AlwaysOffSampler() }),
      textMapPropagator: w3c,
      spanProcessors: [processor],
      // Empty lists stop the SDK from defaulting to OTLP log and metric exporters: metrics go through
      // prom-client and logs through pino.
      logRecordProcessors: [],
      metricReaders: [],
      instrumentations: [],
    });
    sdk.start();
    noteContextManagerRegistered(contextManager);
    // The kit's always-off, the SDK's default (parent-based, always-on root) and every parentbased_* sampler
    // follow an unsampled parent; always_on and a bare traceidratio may not.
    const unsampledParentStaysUnsampled = !samplerFromEnv || samplerFromEnv === "always_off" || samplerFromEnv.startsWith("parentbased_");
    state = { sdk, users: 0, unsampledParentStaysUnsampled };
  }
  const owned = state;
  owned.users += 1;
  let released = false;
  return {
    async shutdown() {
      if (released) return;
      released = true;
      owned.users -= 1;
      if (owned.users > 0 || state !== owned) return;
      state = undefined;
      await owned.sdk.shutdown();
    },
  };
}

/** Writes traceparent/tracestate of the active context into outgoing NATS headers. */
export function injectTraceHeaders(h: MsgHdrs): void {
  w3c.inject(context.active(), h, natsSetter);
}

/** Same, from a given context (no need to make it active first). */
export function injectTraceHeadersFrom(ctx: Context, h: MsgHdrs): void {
  w3c.inject(ctx, h, natsSetter);
}

/**
 * True when a span started under an unsampled remote parent could only be non-recording: the kit started the
 * SDK with a sampler that follows such a parent. A process whose tracer provider someone else registered (a
 * test's in-memory exporter) answers false.
 */
export function unsampledParentStaysUnsampled(): boolean {
  return state?.unsampledParentStaysUnsampled === true;
}

/** The remote parent carried by incoming NATS headers (the root context when there is none). */
export function extractTraceContext(h: MsgHdrs | undefined): Context {
  return h ? w3c.extract(ROOT_CONTEXT, h, natsGetter) : ROOT_CONTEXT;
}

/** Same as injectTraceHeaders, into a plain object (outbox rows store headers as JSON). */
export function injectTraceRecord(carrier: Record<string, string>, ctx: Context = context.active()): void {
  w3c.inject(ctx, carrier, recordSetter);
}

export function extractTraceRecord(carrier: Record<string, string>): Context {
  return w3c.extract(ROOT_CONTEXT, carrier, recordGetter);
}

export const tracer = (): Tracer => trace.getTracer("treasury");
