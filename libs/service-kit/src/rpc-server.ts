import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import type { Span } from "@opentelemetry/api";
import { DomainError, NATS_HEADERS, newRequestId, RPC_TIMEOUT_MS, rpcSubject } from "@treasury/contracts";
import type { AuthContext, RpcReply, RpcRequest } from "@treasury/contracts";
import type { Logger } from "pino";
import { isDatabaseUnavailable } from "./db.ts";
import { runInRequestContext } from "./context.ts";
import type { RpcOutcome, ServiceMetrics } from "./metrics.ts";
import { BATCH_VERSION, decodeFrames, frame, FrameHeaders } from "./rpc-batch.ts";
import { decodeRequest, domainErrorReply, errorReply, parseJson } from "./rpc-wire.ts";
import { extractTraceContext, tracer, unsampledParentStaysUnsampled } from "./telemetry.ts";
import { TenantAdmission, tenantOf } from "./tenant-admission.ts";
import { TurnQueue } from "./turn-queue.ts";

export interface HandlerCtx {
  log: Logger;
  auth: AuthContext;
  requestId: string;
  /** Absolute deadline (ms since epoch) after which the caller has given up. */
  deadline: number;
}

export type RpcHandler = (req: RpcRequest, ctx: HandlerCtx) => Promise<{ status?: number; body: Record<string, unknown> }>;
export type RawRpcHandler = (payload: unknown, ctx: { log: Logger; requestId: string }) => Promise<RpcReply>;

/** One request as the server reads it: a NATS message of its own, or one item of a batch (rpc-batch.ts). */
interface Incoming {
  readonly headers?: MsgHdrs | undefined;
  json(): unknown;
  respond(data: string): void;
}

/** What a registered subject does with one request: a reply, or null to drop it unanswered. */
type Processor = (msg: Incoming, ctx: { log: Logger; requestId: string }) => Promise<RpcReply | null>;

interface Endpoint {
  subject: string;
  /** The metric label and the second half of the span name. */
  operation: string;
  spanName: string;
  process: Processor;
}

/**
 * One request of a batch (a class rather than an object of closures: under tsx every closure given a name
 * also costs a defineProperty call, per request).
 */
class BatchItem implements Incoming {
  readonly headers: MsgHdrs;

  constructor(
    private readonly replies: TurnQueue<string>,
    private readonly replyTo: string,
    private readonly token: string,
    wireHeaders: string,
    private readonly data: string,
  ) {
    this.headers = new FrameHeaders(wireHeaders).asMsgHdrs();
  }

  json(): unknown {
    return JSON.parse(this.data);
  }

  /** Joins the replies to the caller's subject sent at the end of this turn (rpc-batch.ts). */
  respond(reply: string): void {
    this.replies.push(this.replyTo, frame(this.token) + frame(reply));
  }
}

export interface RpcServerOptions {
  nc: NatsConnection;
  prefix: string;
  service: string;
  log: Logger;
  concurrencyMax: number;
  /** Requests of one org in flight at once (fair admission); unset: no per-org cap. */
  tenantConcurrencyMax?: number;
  defaultTimeoutMs?: number;
  /** Optional so the server can be used alone; createService always passes the service's metrics. */
  metrics?: ServiceMetrics;
}

/**
 * Answers RPCs for one service on NATS queue group `<service>`, so replicas share the load. Every request
 * runs inside a request context and a SERVER span continuing the caller's trace (under an unsampled caller
 * that no sampler here would record, the caller's span itself), and always gets a typed reply: a result, a
 * DomainError's code, or a generic internal_error (details stay in the log).
 */
export class RpcServer {
  private readonly opts: RpcServerOptions;
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly subs: Subscription[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly logs = new Map<string, Logger>();
  private readonly durations = new Map<string, { observe(v: number): void }>();
  /** Replies to batched requests (frame pairs), by reply subject, until the end of this turn. */
  private readonly batchReplies = new TurnQueue<string>((replyTo, frames) => this.sendBatchReplies(replyTo, frames));
  private started = false;
  private draining = false;

  private readonly tenants: TenantAdmission | undefined;

  constructor(opts: RpcServerOptions) {
    this.opts = opts;
    this.tenants = opts.tenantConcurrencyMax === undefined ? undefined : new TenantAdmission(opts.tenantConcurrencyMax);
  }

  /**
   * Runs `work` under the org's share of the process (fair admission), or answers "unavailable, retry" when the
   * process is busy and the org already has its share in flight.
   */
  private async admitted(payload: unknown, work: () => Promise<RpcReply | null>): Promise<RpcReply | null> {
    const tenant = this.tenants === undefined ? undefined : tenantOf(payload);
    if (tenant === undefined || this.tenants === undefined) return work();
    const release = this.tenants.enter(tenant, this.running.size * 2 >= this.opts.concurrencyMax);
    if (release === undefined) return errorReply("service_unavailable", "Too many requests of this org in flight; retry shortly with the same idempotency key");
    try {
      return await work();
    } finally {
      release();
    }
  }

  handle(operation: string, handler: RpcHandler): void {
    const defaultTimeoutMs = this.opts.defaultTimeoutMs ?? RPC_TIMEOUT_MS;
    this.register(rpcSubject(this.opts.prefix, this.opts.service, operation), operation, async (msg, base) => {
      const req = decodeRequest(msg);
      const deadline = req.deadline ?? Date.now() + defaultTimeoutMs;
      if (Date.now() > deadline) {
        // The caller has already answered its client with a timeout; doing the work now would only surprise it.
        base.log.warn({ deadline }, "dropped request past its deadline");
        return null;
      }
      return this.admitted(req, async () => {
        const res = await handler(req, { log: base.log, auth: req.auth, requestId: base.requestId, deadline });
        return { ok: true, status: res.status ?? 200, body: res.body };
      });
    });
  }

  /** Internal RPCs (e.g. `svc.ledger.post`) whose payload is not a gateway RpcRequest. */
  handleRaw(subjectSuffix: string, handler: RawRpcHandler): void {
    const subject = `${this.opts.prefix}svc.${this.opts.service}.${subjectSuffix}`;
    this.register(subject, subjectSuffix, (msg, base) => {
      const payload = parseJson(msg);
      return this.admitted(payload, () => handler(payload, base));
    });
  }

  /** Gives routes the service has not built a clear not_implemented answer instead of a timeout. */
  answerUnimplemented(operations: string[]): void {
    for (const operation of operations) {
      if (this.endpoints.has(rpcSubject(this.opts.prefix, this.opts.service, operation))) continue;
      // Raw: the answer does not depend on the payload (pages send a PageRequest, not an RpcRequest).
      this.handleRaw(operation, async () => errorReply("not_implemented", `${this.opts.service}.${operation} is not implemented yet`));
    }
  }

  /** True when an operation has a handler (including a not_implemented one). */
  handles(operation: string): boolean {
    return this.endpoints.has(rpcSubject(this.opts.prefix, this.opts.service, operation));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const endpoint of this.endpoints.values()) this.subscribe(endpoint);
  }

  inFlight(): number {
    return this.running.size;
  }

  /** Stops taking requests (the server routes new ones elsewhere) and waits for the ones already running. */
  async drain(): Promise<void> {
    this.draining = true;
    // async wrapper: drain() on a closed connection throws synchronously, which must not skip the wait below.
    await Promise.allSettled(this.subs.map(async (s) => (s.isClosed() ? undefined : s.drain())));
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    // The last batched replies go out now, before the caller drains or closes the connection.
    this.batchReplies.flush();
  }

  private register(subject: string, operation: string, process: Processor): void {
    if (this.endpoints.has(subject)) throw new Error(`RPC subject registered twice: ${subject}`);
    const endpoint = { subject, operation, spanName: `${this.opts.service}.${operation}`, process };
    this.endpoints.set(subject, endpoint);
    if (this.started && !this.draining) this.subscribe(endpoint);
  }

  private subscribe(endpoint: Endpoint): void {
    const sub = this.opts.nc.subscribe(endpoint.subject, {
      queue: this.opts.service,
      callback: (err, msg) => {
        if (err) this.opts.log.error({ err, subject: endpoint.subject }, "rpc subscription failed");
        else if (msg.headers?.get(NATS_HEADERS.rpcBatch)) this.dispatchBatch(endpoint, msg);
        else this.dispatch(endpoint, msg);
      },
    });
    this.subs.push(sub);
  }

  /** One child logger per operation (its bindings never change), not one per request. */
  private endpointLog(operation: string): Logger {
    let log = this.logs.get(operation);
    if (log === undefined) {
      log = this.opts.log.child({ operation });
      this.logs.set(operation, log);
    }
    return log;
  }

  /**
   * Each request of a batch runs as if it had come alone (its own request id, span, deadline and place
   * under concurrencyMax); the replies go back through the turn's reply batch for the caller's subject.
   */
  private dispatchBatch(endpoint: Endpoint, msg: Msg): void {
    let records: string[][] | undefined;
    try {
      records = msg.headers?.get(NATS_HEADERS.rpcBatch) === BATCH_VERSION ? decodeFrames(msg.string(), 3) : undefined;
    } catch {
      records = undefined;
    }
    if (records === undefined || !msg.reply) {
      // Not something a kit client sends. Anything but frames on a batch token fails all of the batch's requests.
      this.opts.log.error({ subject: endpoint.subject }, "malformed rpc batch");
      if (msg.reply) this.respond(msg, errorReply("validation_error", "Malformed RPC batch"));
      return;
    }
    for (const [token, wireHeaders, data] of records as [string, string, string][]) {
      this.dispatch(endpoint, new BatchItem(this.batchReplies, msg.reply, token, wireHeaders, data));
    }
  }

  private sendBatchReplies(replyTo: string, frames: string[]): void {
    try {
      this.opts.nc.publish(replyTo, frames.join(""));
    } catch (err) {
      this.opts.log.error({ err }, "could not send rpc replies");
    }
  }

  private dispatch(endpoint: Endpoint, msg: Incoming): void {
    if (this.running.size >= this.opts.concurrencyMax) {
      // Shedding load with a retryable answer beats queueing past the caller's deadline.
      this.respond(msg, errorReply("service_unavailable", "Service overloaded; retry with the same idempotency key"));
      this.observe(endpoint.operation, "rejected", 0, "service_unavailable");
      return;
    }
    const run = this.run(endpoint, msg).finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private run(endpoint: Endpoint, msg: Incoming): Promise<void> {
    const h = msg.headers;
    const requestId = h?.get(NATS_HEADERS.requestId) || newRequestId();
    const log = this.endpointLog(endpoint.operation);
    const parent = extractTraceContext(h);
    // Under an unsampled caller and a sampler that follows it, the SERVER span could only be non-recording;
    // the caller's own (non-recording) span then stands in for it, as on the client side: same trace id in
    // the logs and onward, without a span object and a random id per request.
    const callerSpan = trace.getSpan(parent);
    const span =
      callerSpan !== undefined && (callerSpan.spanContext().traceFlags & TraceFlags.SAMPLED) === 0 && unsampledParentStaysUnsampled()
        ? callerSpan
        : tracer().startSpan(endpoint.spanName, { kind: SpanKind.SERVER, attributes: { "messaging.destination.name": endpoint.subject } }, parent);
    return runInRequestContext(requestId, span === callerSpan ? parent : trace.setSpan(parent, span), () =>
      this.execute(endpoint, msg, { log, requestId }, span),
    );
  }

  private async execute(endpoint: Endpoint, msg: Incoming, ctx: { log: Logger; requestId: string }, span: Span): Promise<void> {
    const startedAt = performance.now();
    let reply: RpcReply | null;
    try {
      reply = await endpoint.process(msg, ctx);
    } catch (e) {
      reply = this.failureReply(e, ctx.log, span);
    }
    const seconds = (performance.now() - startedAt) / 1000;
    if (reply === null) this.observe(endpoint.operation, "rejected", seconds, undefined);
    else if (reply.ok) this.observe(endpoint.operation, "ok", seconds, undefined);
    else {
      span.setAttribute("rpc.error_code", reply.error.code);
      const outcome = reply.error.code === "internal_error" ? "internal_error" : "domain_error";
      this.observe(endpoint.operation, outcome, seconds, reply.error.code);
    }
    span.end();
    if (reply !== null) this.respond(msg, reply, ctx.log);
  }

  private failureReply(e: unknown, log: Logger, span: Span): RpcReply {
    if (e instanceof DomainError) return domainErrorReply(e);
    if (isDatabaseUnavailable(e)) {
      log.warn({ err: e }, "database unavailable");
      span.setStatus({ code: SpanStatusCode.ERROR, message: "database unavailable" });
      return errorReply("service_unavailable");
    }
    // Unknown failures are bugs: the stack goes to the log and the trace, never to the caller.
    log.error({ err: e }, "rpc handler failed");
    span.recordException(e instanceof Error ? e : new Error(String(e)));
    span.setStatus({ code: SpanStatusCode.ERROR });
    return errorReply("internal_error");
  }

  private respond(msg: Incoming, reply: RpcReply, log: Logger = this.opts.log): void {
    try {
      msg.respond(JSON.stringify(reply));
    } catch (err) {
      log.error({ err }, "could not send rpc reply");
    }
  }

  private observe(operation: string, outcome: RpcOutcome, seconds: number, code: string | undefined): void {
    const m = this.opts.metrics;
    if (!m) return;
    // One labelled child per (operation, outcome): prom-client would otherwise hash the labels every time.
    const k = `${operation}\u0000${outcome}`;
    let child = this.durations.get(k);
    if (child === undefined) {
      child = m.rpcDuration.labels({ operation, outcome });
      this.durations.set(k, child);
    }
    child.observe(seconds);
    if (code !== undefined) m.errorsTotal.inc({ code });
  }
}
