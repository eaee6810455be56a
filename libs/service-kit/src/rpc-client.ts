import { ClosedConnectionError, createInbox, DrainingConnectionError } from "@nats-io/transport-node";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { context, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import type { Context } from "@opentelemetry/api";
import { NATS_HEADERS } from "@treasury/contracts";
import type { RpcReply } from "@treasury/contracts";
import { requestContext } from "./context.ts";
import { asPublishHeaders, inboxPrefix } from "./nats-internals.ts";
import { decodeFrames, frame } from "./rpc-batch.ts";
import { BATCH_HEADERS, decodeForward, decodeReply, errorReply, MALFORMED_REPLY, RequestHeaders } from "./rpc-wire.ts";
import type { ErrorReply, ForwardReply } from "./rpc-wire.ts";
import { injectTraceHeadersFrom, tracer } from "./telemetry.ts";
import { TurnQueue } from "./turn-queue.ts";

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
    this.inbox = `${createInbox(inboxPrefix(nc))}.`;
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
        // A full batch goes now (the client writes it after this microtask), so the service works on it
        // while this turn goes on.
        this.send(subject, this.queued.take(subject));
      }
    });
  }

  /** Sends one subject's queued requests: one alone as its own message, more in batches. */
  private send(subject: string, items: Queued[]): void {
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
      this.nc.publish(subject, q.data, { reply: this.inbox + q.token, headers: asPublishHeaders(q.headers) });
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
      this.nc.publish(subject, payload, { reply: this.inbox + batchToken, headers: asPublishHeaders(BATCH_HEADERS) });
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

export interface RpcCallOptions {
  timeoutMs: number;
  requestId?: string;
  parent?: Context;
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

async function call<R extends RpcReply | ForwardReply>(
  nc: NatsConnection,
  subject: string,
  payload: unknown,
  opts: RpcCallOptions,
  decode: (text: string) => R,
): Promise<R | ErrorReply> {
  const parent = opts.parent ?? context.active();
  const parentSpan = trace.getSpan(parent);
  // Under an unsampled, non-recording parent the CLIENT span would not be recorded either (every standard
  // sampler follows the parent or the trace id): its context would differ from the parent's only by a span id
  // that no exported span carries. Then the parent's own context goes out and no span is made.
  const span =
    parentSpan !== undefined && !parentSpan.isRecording() && (parentSpan.spanContext().traceFlags & TraceFlags.SAMPLED) === 0
      ? undefined
      : tracer().startSpan(`rpc ${subject}`, { kind: SpanKind.CLIENT }, parent);
  try {
    const h = new RequestHeaders();
    const requestId = opts.requestId ?? requestContext.get()?.requestId;
    if (requestId !== undefined) h.set(NATS_HEADERS.requestId, requestId);
    injectTraceHeadersFrom(span === undefined ? parent : trace.setSpan(parent, span), h.asMsgHdrs());
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
