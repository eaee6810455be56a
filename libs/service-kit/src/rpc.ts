import { ClosedConnectionError, createInbox, DrainingConnectionError, headers } from "@nats-io/transport-node";
import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { context, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import type { Context, Span } from "@opentelemetry/api";
import {
  DomainError,
  ERROR_CODES,
  isErrorCode,
  NATS_HEADERS,
  newRequestId,
  RPC_TIMEOUT_MS,
  SCOPES,
  RpcReplySchema,
  RpcRequest,
  rpcSubject,
  validationProblem,
} from "@treasury/contracts";
import type { AuthContext, ErrorCode, RpcErrorBody, RpcReply } from "@treasury/contracts";
import type { Logger } from "pino";
import type { z } from "zod";
import { requestContext, runInRequestContext } from "./context.ts";
import type { RpcOutcome, ServiceMetrics } from "./metrics.ts";
import { BATCH_VERSION, decodeFrames, frame, FrameHeaders } from "./rpc-batch.ts";
import { extractTraceContext, injectTraceHeadersFrom, tracer, unsampledParentStaysUnsampled } from "./telemetry.ts";

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

export function errorReply(code: ErrorCode, message?: string, opts: Omit<RpcErrorBody, "code" | "message"> = {}): RpcReply {
  return { ok: false, error: { code, message: message ?? ERROR_CODES[code].message, ...opts } };
}

/** A DomainError as a typed reply; absent optional fields are left out rather than sent as undefined. */
export function domainErrorReply(e: DomainError): RpcReply {
  return errorReply(e.code, e.message, {
    ...(e.hint !== undefined ? { hint: e.hint } : {}),
    ...(e.details !== undefined ? { details: e.details } : {}),
    ...(e.extra !== undefined ? { extra: e.extra } : {}),
  });
}

function parseJson(msg: Incoming): unknown {
  try {
    return msg.json();
  } catch {
    throw new DomainError("validation_error", "RPC payload is not valid JSON");
  }
}

const SCOPE_SET: ReadonlySet<unknown> = new Set<unknown>(SCOPES);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The RpcRequest schema checked by hand for a well-formed request (every one the gateway sends): the same
 * data as the schema's output, or undefined for anything else, which the schema then decodes (and words
 * the error) as before.
 */
function decodeWellFormed(data: unknown): RpcRequest | undefined {
  if (!isPlainObject(data)) return undefined;
  const { auth: a, params, query, body, deadline, alt_base_url } = data;
  if (!isPlainObject(a) || !isPlainObject(params) || !isPlainObject(query)) return undefined;
  if (deadline !== undefined && typeof deadline !== "number") return undefined;
  if (alt_base_url !== undefined && typeof alt_base_url !== "string") return undefined;
  const { org_id, livemode, key_id, scopes, request_id } = a;
  if (typeof org_id !== "string" || typeof livemode !== "boolean" || typeof key_id !== "string" || typeof request_id !== "string") return undefined;
  if (scopes !== null) {
    if (!Array.isArray(scopes)) return undefined;
    for (const sc of scopes) if (!SCOPE_SET.has(sc)) return undefined;
  }
  for (const k in params) if (typeof params[k] !== "string") return undefined;
  const auth: AuthContext = { org_id, livemode, key_id, scopes: scopes as AuthContext["scopes"], request_id };
  const req: RpcRequest = { auth, params: params as Record<string, string>, query, body };
  if (deadline !== undefined) req.deadline = deadline;
  if (alt_base_url !== undefined) req.alt_base_url = alt_base_url;
  return req;
}

function decodeRequest(msg: Incoming): RpcRequest {
  const data = parseJson(msg);
  const fast = decodeWellFormed(data);
  if (fast !== undefined) return fast;
  const parsed = RpcRequest.safeParse(data);
  if (!parsed.success) throw new DomainError("validation_error", "Malformed RPC request", { details: validationProblem(parsed.error).details });
  const { auth, params, query, body, deadline, alt_base_url } = parsed.data;
  return { auth, params, query, body, ...(deadline !== undefined ? { deadline } : {}), ...(alt_base_url !== undefined ? { alt_base_url } : {}) };
}

/**
 * Values collected by key until the end of the event-loop turn (setImmediate), then handed on key by key, in
 * the order the keys first came. take() hands a key's values on earlier; flush() at once.
 */
class TurnQueue<V> {
  private byKey = new Map<string, V[]>();
  private scheduled = false;

  constructor(private readonly onFlush: (key: string, values: V[]) => void) {}

  /** Adds a value; returns how many the key now holds. */
  push(key: string, value: V): number {
    let values = this.byKey.get(key);
    if (values === undefined) {
      values = [];
      this.byKey.set(key, values);
    }
    values.push(value);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return values.length;
  }

  take(key: string): V[] {
    const values = this.byKey.get(key) ?? [];
    this.byKey.delete(key);
    return values;
  }

  flush(): void {
    this.scheduled = false;
    const byKey = this.byKey;
    if (byKey.size === 0) return;
    this.byKey = new Map();
    for (const [key, values] of byKey) this.onFlush(key, values);
  }
}

/**
 * One request of a batch (a class rather than an object of closures: under tsx every closure given a name
 * also costs a defineProperty call, per request).
 */
class BatchItem implements Incoming {
  readonly headers: MsgHdrs;

  constructor(
    private readonly server: RpcServer,
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

  respond(reply: string): void {
    this.server.batchReply(this.replyTo, this.token, reply);
  }
}

export interface RpcServerOptions {
  nc: NatsConnection;
  prefix: string;
  service: string;
  log: Logger;
  concurrencyMax: number;
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
  private started = false;
  private draining = false;

  constructor(opts: RpcServerOptions) {
    this.opts = opts;
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
      const res = await handler(req, { log: base.log, auth: req.auth, requestId: base.requestId, deadline });
      return { ok: true, status: res.status ?? 200, body: res.body };
    });
  }

  /** Internal RPCs (e.g. `svc.ledger.post`) whose payload is not a gateway RpcRequest. */
  handleRaw(subjectSuffix: string, handler: RawRpcHandler): void {
    const subject = `${this.opts.prefix}svc.${this.opts.service}.${subjectSuffix}`;
    this.register(subject, subjectSuffix, (msg, base) => handler(parseJson(msg), base));
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
    this.pendingReplies.flush();
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

  private readonly logs = new Map<string, Logger>();

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
      this.dispatch(endpoint, new BatchItem(this, msg.reply, token, wireHeaders, data));
    }
  }

  /** Replies to batched requests (frame pairs), by reply subject, until the end of this turn. */
  private readonly pendingReplies = new TurnQueue<string>((replyTo, frames) => {
    coalesceWrites(this.opts.nc);
    try {
      this.opts.nc.publish(replyTo, frames.join(""));
    } catch (err) {
      this.opts.log.error({ err }, "could not send rpc replies");
    }
  });

  /** @internal BatchItem.respond */
  batchReply(replyTo: string, token: string, reply: string): void {
    this.pendingReplies.push(replyTo, frame(token) + frame(reply));
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
    return runInRequestContext(requestId, span === callerSpan ? parent : trace.setSpan(parent, span), () => this.execute(endpoint, msg, { log, requestId }, span));
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
    // Unknown failures are bugs: the stack goes to the log and the trace, never to the caller.
    log.error({ err: e }, "rpc handler failed");
    span.recordException(e instanceof Error ? e : new Error(String(e)));
    span.setStatus({ code: SpanStatusCode.ERROR });
    return errorReply("internal_error");
  }

  private respond(msg: Incoming, reply: RpcReply, log: Logger = this.opts.log): void {
    try {
      coalesceWrites(this.opts.nc);
      msg.respond(JSON.stringify(reply));
    } catch (err) {
      log.error({ err }, "could not send rpc reply");
    }
  }

  private readonly durations = new Map<string, { observe(v: number): void }>();

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

function normaliseReply(raw: z.infer<typeof RpcReplySchema>): RpcReply {
  if (raw.ok) return raw;
  const { code, message, hint, details, extra } = raw.error;
  return errorReply(isErrorCode(code) ? code : "internal_error", message, {
    ...(hint !== undefined ? { hint } : {}),
    ...(details !== undefined ? { details } : {}),
    ...(extra !== undefined ? { extra } : {}),
  });
}

const MALFORMED_REPLY = "Service answered with a malformed reply";

/** A reply's JSON as a typed reply. Successes are checked by hand (the hot path); errors by the schema. */
export function decodeReplyData(data: unknown): RpcReply {
  if (typeof data === "object" && data !== null) {
    const r = data as { ok?: unknown; status?: unknown; body?: unknown };
    if (r.ok === true) {
      const { status, body } = r;
      if (Number.isInteger(status) && typeof body === "object" && body !== null && !Array.isArray(body)) {
        return { ok: true, status: status as number, body: body as Record<string, unknown> };
      }
      return errorReply("internal_error", MALFORMED_REPLY);
    }
  }
  const parsed = RpcReplySchema.safeParse(data);
  return parsed.success ? normaliseReply(parsed.data) : errorReply("internal_error", MALFORMED_REPLY);
}

function decodeReply(text: string): RpcReply {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return errorReply("internal_error", MALFORMED_REPLY);
  }
  return decodeReplyData(data);
}

/** The Node socket under a connection, when the transport has one. */
function natsSocket(nc: NatsConnection): { cork(): void; uncork(): void } | undefined {
  return (nc as unknown as { protocol?: { transport?: { socket?: { cork(): void; uncork(): void } } } }).protocol?.transport?.socket;
}

/**
 * Coalesce the NATS writes of one event-loop turn into one socket write: under load many requests (or
 * replies) are sent per poll phase, and the client would otherwise make one write syscall per message. Corks
 * the client's socket on the first send of a turn and uncorks it in setImmediate (after the client's
 * microtask flush). Works only when the transport exposes a Node socket; otherwise it does nothing.
 */
const corked = new WeakSet<object>();

function coalesceWrites(nc: NatsConnection): void {
  const socket = natsSocket(nc);
  if (!socket || corked.has(socket)) return;
  corked.add(socket);
  socket.cork();
  setImmediate(() => {
    corked.delete(socket);
    socket.uncork();
  });
}

/**
 * Writes what the client has buffered now instead of at the end of the turn: after the client library's own
 * flush (a microtask it queued on publish), uncork and cork again for the rest of the turn.
 */
function sendWritesNow(nc: NatsConnection): void {
  const socket = natsSocket(nc);
  if (!socket || !corked.has(socket)) return;
  queueMicrotask(() => {
    if (!corked.has(socket)) return;
    socket.uncork();
    socket.cork();
  });
}

/**
 * The headers of an outgoing request, encoded straight to the wire format the client library writes
 * (`NATS/1.0\r\nKey: value\r\n…\r\n`): the library's MsgHdrs keeps a map of arrays, validates each key with
 * a MIME canonicalisation and each value with a regex, and builds the string on publish. Only set() (as the
 * propagator and rpcCall use it) and encode() (all that publish reads) are needed here. A value the library
 * would refuse (CR or LF) goes through the library's headers so it fails the same way.
 */
const utf8 = new TextEncoder();

class RequestHeaders {
  private text = "NATS/1.0\r\n";
  private names: string[] = [];

  set(k: string, v: string): void {
    if (this.names.includes(k) || v.includes("\r") || v.includes("\n")) {
      // Rare (a key set twice, a value with a line break): the library's semantics exactly.
      const h = this.toLibrary();
      h.set(k, v);
      this.fromLibrary(h);
      return;
    }
    this.names.push(k);
    this.text += `${k}: ${v.trim()}\r\n`;
  }

  get(k: string): string {
    return this.toLibrary().get(k);
  }

  encode(): Uint8Array {
    // No header at all encodes as nothing, as the library's does.
    return this.names.length === 0 ? new Uint8Array(0) : utf8.encode(`${this.text}\r\n`);
  }

  /** The header lines as text, for a batch frame (rpc-batch.ts). */
  wire(): string {
    return this.text;
  }

  private toLibrary(): MsgHdrs {
    const h = headers();
    for (const line of this.text.split("\r\n").slice(1)) {
      const i = line.indexOf(":");
      if (i > 0) h.append(line.slice(0, i), line.slice(i + 1).trim());
    }
    return h;
  }

  private fromLibrary(h: MsgHdrs): void {
    this.names = h.keys();
    this.text = "NATS/1.0\r\n";
    for (const k of this.names) for (const v of h.values(k)) this.text += `${k}: ${v}\r\n`;
  }
}

type Outcome = { kind: "reply"; text: string } | { kind: "timeout" } | { kind: "unavailable" } | { kind: "malformed" };

interface Pending {
  resolve(o: Outcome): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout>;
  /** The batch token it went out in, if it went out in a batch. */
  batch?: string;
}

interface Queued {
  token: string;
  data: string;
  headers: RequestHeaders;
}

interface Batch {
  tokens: string[];
  /** Requests of the batch not yet settled; the entry goes when none is left. */
  open: number;
}

const TIMEOUT: Outcome = { kind: "timeout" };
const UNAVAILABLE: Outcome = { kind: "unavailable" };
const MALFORMED: Outcome = { kind: "malformed" };

/** A batch stays well below NATS's default 1 MiB max_payload even if every character took three bytes. */
const BATCH_MAX_REQUESTS = 256;
const BATCH_MAX_CHARS = 192 * 1024;
/**
 * A batch this full is sent at once rather than at the end of the turn, so the service works on it while
 * the caller's turn goes on (a gateway turn under load carries 70–90 requests). bench:gateway, ratio to
 * hello-world: end of turn only 0.318–0.329; at 16 0.318–0.334; 32 0.362–0.362; 48 0.345–0.368; 64 0.353–0.368.
 */
export const BATCH_SEND_AT = 32;

/** The headers of a batch message itself (the requests' own headers travel in its frames). */
class BatchHeaders {
  private static readonly bytes = utf8.encode(`NATS/1.0\r\n${NATS_HEADERS.rpcBatch}: ${BATCH_VERSION}\r\n\r\n`);
  encode(): Uint8Array {
    return BatchHeaders.bytes;
  }
}
const BATCH_HEADERS = new BatchHeaders() as unknown as MsgHdrs;

/**
 * Request/reply over one wildcard inbox subscription per connection. The client library's own request()
 * does the same multiplexing but allocates two Error objects (stack captures) per request, whatever the
 * outcome; this one allocates a promise, a timer and a map entry, and reports outcomes as values.
 *
 * Requests are sent at the end of the event-loop turn that made them, or as soon as BATCH_SEND_AT of them wait
 * for one subject: one alone goes as its own message, two or more to the same subject as one batch message
 * (rpc-batch.ts), whose replies come back batched too.
 */
class RpcClient {
  private readonly inbox: string;
  private readonly pending = new Map<string, Pending>();
  private readonly batches = new Map<string, Batch>();
  /** Requests not sent yet, by subject, until the end of this turn. */
  private readonly queued = new TurnQueue<Queued>((subject, items) => this.send(subject, items));
  private seq = 0;

  constructor(private readonly nc: NatsConnection) {
    this.inbox = `${createInbox((nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix ?? "")}.`;
    nc.subscribe(`${this.inbox}*`, {
      callback: (err, msg) => {
        if (err) {
          // The inbox subscription itself failed (e.g. a permission error): nothing can be answered.
          this.failAll();
          return;
        }
        const token = msg.subject.slice(this.inbox.length);
        // The server answers a request nobody subscribes to with an empty 503 status message.
        const noResponders = msg.data.length === 0 && msg.headers?.code === 503;
        if (token.startsWith("B")) {
          this.onBatchReply(token, msg, noResponders);
          return;
        }
        const p = this.pending.get(token);
        if (p === undefined) return; // late reply after a timeout
        this.settle(token, p);
        p.resolve(noResponders ? UNAVAILABLE : replyOutcome(msg));
      },
    });
    void nc.closed().then(() => this.failAll());
  }

  request(subject: string, data: string, h: RequestHeaders, timeoutMs: number): Promise<Outcome> {
    const token = (this.seq++).toString(36);
    return new Promise<Outcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        const p = this.pending.get(token);
        if (p === undefined) return;
        this.settle(token, p);
        resolve(TIMEOUT);
      }, timeoutMs);
      this.pending.set(token, { resolve, reject, timer });
      if (this.queued.push(subject, { token, data, headers: h }) >= BATCH_SEND_AT) {
        // A full batch goes now, so the service works on it while this turn goes on.
        this.send(subject, this.queued.take(subject));
        sendWritesNow(this.nc);
      }
    });
  }

  /** Sends one subject's queued requests: one alone as its own message, more in batches. */
  private send(subject: string, items: Queued[]): void {
    coalesceWrites(this.nc);
    // A request can have timed out before its turn ended (a zero timeout set from an immediate).
    const live = items.filter((q) => this.pending.has(q.token));
    let from = 0;
    while (from < live.length) {
      let to = from + 1;
      let chars = live[from]!.data.length;
      while (to < live.length && to - from < BATCH_MAX_REQUESTS && chars + live[to]!.data.length <= BATCH_MAX_CHARS) chars += live[to++]!.data.length;
      if (to - from === 1) this.publishOne(subject, live[from]!);
      else this.publishBatch(subject, live.slice(from, to));
      from = to;
    }
  }

  private publishOne(subject: string, q: Queued): void {
    try {
      this.nc.publish(subject, q.data, { reply: this.inbox + q.token, headers: q.headers as unknown as MsgHdrs });
    } catch (e) {
      this.failPublish([q.token], e);
    }
  }

  private publishBatch(subject: string, items: Queued[]): void {
    const batchToken = `B${(this.seq++).toString(36)}`;
    const tokens = items.map((q) => q.token);
    let payload = "";
    for (const q of items) payload += frame(q.token) + frame(q.headers.wire()) + frame(q.data);
    this.batches.set(batchToken, { tokens, open: tokens.length });
    for (const t of tokens) this.pending.get(t)!.batch = batchToken;
    try {
      this.nc.publish(subject, payload, { reply: this.inbox + batchToken, headers: BATCH_HEADERS });
    } catch (e) {
      this.failPublish(tokens, e);
    }
  }

  /** A publish that threw: a closed or draining connection is "unavailable"; anything else is the caller's error. */
  private failPublish(tokens: string[], e: unknown): void {
    const unavailable = e instanceof ClosedConnectionError || e instanceof DrainingConnectionError;
    this.settleEach(tokens, (p) => (unavailable ? p.resolve(UNAVAILABLE) : p.reject(e)));
  }

  /** Settles each request still pending among `tokens`, then finishes it. */
  private settleEach(tokens: string[], finish: (p: Pending) => void): void {
    for (const t of tokens) {
      const p = this.pending.get(t);
      if (p === undefined) continue;
      this.settle(t, p);
      finish(p);
    }
  }

  private onBatchReply(batchToken: string, msg: Msg, noResponders: boolean): void {
    const batch = this.batches.get(batchToken);
    if (batch === undefined) return; // every request of it has timed out already
    let records: string[][] | undefined;
    if (!noResponders) {
      try {
        records = decodeFrames(msg.string(), 2);
      } catch {
        records = undefined;
      }
    }
    if (records === undefined) {
      // Nobody serves the subject, or the answer is not batch frames (a service that cannot read batches).
      this.settleEach(batch.tokens, (p) => p.resolve(noResponders ? UNAVAILABLE : MALFORMED));
      return;
    }
    for (const [token, text] of records as [string, string][]) {
      const p = this.pending.get(token);
      if (p === undefined || p.batch !== batchToken) continue; // timed out, or not this batch's
      this.settle(token, p);
      p.resolve({ kind: "reply", text });
    }
  }

  private settle(token: string, p: Pending): void {
    clearTimeout(p.timer);
    this.pending.delete(token);
    if (p.batch !== undefined) {
      const b = this.batches.get(p.batch);
      if (b !== undefined && --b.open === 0) this.batches.delete(p.batch);
    }
  }

  private failAll(): void {
    for (const [token, p] of this.pending) {
      this.settle(token, p);
      p.resolve(UNAVAILABLE);
    }
  }
}

/** A single reply's text; bytes that are not UTF-8 come back as a malformed reply. */
function replyOutcome(msg: Msg): Outcome {
  try {
    return { kind: "reply", text: msg.string() };
  } catch {
    return MALFORMED;
  }
}

const clients = new WeakMap<NatsConnection, RpcClient>();

function clientFor(nc: NatsConnection): RpcClient {
  let c = clients.get(nc);
  if (c === undefined) {
    c = new RpcClient(nc);
    clients.set(nc, c);
  }
  return c;
}

type ErrorReply = Extract<RpcReply, { ok: false }>;

/** A success whose body is still the JSON text the service wrote (always an object: it starts with `{`). */
export type ForwardReply = { ok: true; status: number; bodyJson: string } | ErrorReply;

const OK_PREFIX = '{"ok":true,"status":';
const BODY_KEY = ',"body":{';
const STATUS_RE = /^[1-5]\d\d$/;

/**
 * A reply for a caller that passes the body on as JSON (the gateway): a kit service writes a success as
 * `{"ok":true,"status":NNN,"body":{…}}` (JSON.stringify keeps that key order), so the body's text is cut out
 * without parsing it and serialising it again. Anything else is decoded in full, as decodeReply does.
 */
function decodeForward(text: string): ForwardReply {
  if (text.startsWith(OK_PREFIX) && text.endsWith("}}")) {
    const bodyAt = text.indexOf(BODY_KEY, OK_PREFIX.length);
    if (bodyAt !== -1 && STATUS_RE.test(text.slice(OK_PREFIX.length, bodyAt))) {
      return { ok: true, status: Number(text.slice(OK_PREFIX.length, bodyAt)), bodyJson: text.slice(bodyAt + BODY_KEY.length - 1, -1) };
    }
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return errorReply("internal_error", MALFORMED_REPLY) as ErrorReply;
  }
  const r = decodeReplyData(data);
  return r.ok ? { ok: true, status: r.status, bodyJson: JSON.stringify(r.body) } : r;
}

/**
 * Sends one request and waits for its typed reply. A timeout means "outcome unknown" (service_timeout),
 * never "failed"; no subscriber at all, or a closed connection, means service_unavailable.
 * The CLIENT span is a child of `opts.parent` (default: the active context); its context goes out in the
 * NATS headers with the request id (default: the request context's).
 */
export function rpcCall(nc: NatsConnection, subject: string, payload: unknown, opts: RpcCallOptions): Promise<RpcReply> {
  return call(nc, subject, payload, opts, decodeReply);
}

/** rpcCall for a caller that sends a success's body on unchanged: the body comes back as JSON text. */
export function rpcForward(nc: NatsConnection, subject: string, payload: unknown, opts: RpcCallOptions): Promise<ForwardReply> {
  return call(nc, subject, payload, opts, decodeForward);
}

export interface RpcCallOptions {
  timeoutMs: number;
  requestId?: string;
  parent?: Context;
}

async function call<R extends RpcReply | ForwardReply>(nc: NatsConnection, subject: string, payload: unknown, opts: RpcCallOptions, decode: (text: string) => R): Promise<R | ErrorReply> {
  const parent = opts.parent ?? context.active();
  const parentSpan = trace.getSpan(parent);
  // Under an unsampled, non-recording parent the CLIENT span would not be recorded either (every standard
  // sampler follows the parent or the trace id): its context would differ from the parent's only by a span id
  // that no exported span carries. Then the parent's own context goes out and no span is made.
  const span = parentSpan !== undefined && !parentSpan.isRecording() && (parentSpan.spanContext().traceFlags & TraceFlags.SAMPLED) === 0 ? undefined : tracer().startSpan(`rpc ${subject}`, { kind: SpanKind.CLIENT }, parent);
  try {
    const h = new RequestHeaders();
    const requestId = opts.requestId ?? requestContext.get()?.requestId;
    if (requestId !== undefined) h.set(NATS_HEADERS.requestId, requestId);
    injectTraceHeadersFrom(span === undefined ? parent : trace.setSpan(parent, span), h as unknown as MsgHdrs);
    const outcome = await clientFor(nc).request(subject, JSON.stringify(payload ?? null), h, opts.timeoutMs);
    let reply: R | ErrorReply;
    if (outcome.kind === "reply") reply = decode(outcome.text);
    else if (outcome.kind === "malformed") reply = errorReply("internal_error", MALFORMED_REPLY) as ErrorReply;
    else reply = errorReply(outcome.kind === "timeout" ? "service_timeout" : "service_unavailable") as ErrorReply;
    if (!reply.ok && span !== undefined) {
      span.setAttribute("rpc.error_code", reply.error.code);
      if (outcome.kind !== "reply") span.setStatus({ code: SpanStatusCode.ERROR, message: reply.error.code });
    }
    return reply;
  } catch (e) {
    span?.setStatus({ code: SpanStatusCode.ERROR, message: String(e) });
    throw e;
  } finally {
    span?.end();
  }
}
