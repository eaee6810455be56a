import { randomBytes } from "node:crypto";
import { ClosedConnectionError, DrainingConnectionError } from "@nats-io/transport-node";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { context, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import type { Context } from "@opentelemetry/api";
import { NATS_HEADERS, natsInboxBranch } from "@treasury/contracts";
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
  /** The subject its reply must come to: the callee's branch of the inbox and its token. */
  reply: string;
  resolve(o: Outcome): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout>;
  /** The batch token it went out in, if it went out in a batch. */
  batch?: string;
}

interface Queued {
  token: string;
  /** Its reply subject, the same as its Pending entry's. */
  reply: string;
  data: string;
  headers: RequestHeaders;
}

interface Batch {
  reply: string;
  tokens: string[];
  /** Requests of the batch not yet settled; the entry goes when none is left. */
  open: number;
}

/**
 * Reply tokens carry 128 random bits, so no one who sees other replies of this connection (a callee sees the
 * subjects of the requests sent to it) can predict where the next reply is awaited (ADR 0011). They are drawn
 * from a buffer refilled TOKEN_CHUNK_COUNT at a time: one randomBytes call per that many requests.
 */
const TOKEN_BYTES = 16;
const TOKEN_CHUNK_COUNT = 256;
/** Inbox branches kept per connection, one per subject called; past it the cache starts over. */
const BRANCHES_MAX = 4096;

class TokenSource {
  private chunk = Buffer.alloc(0);
  private at = 0;

  /** 22 base64url characters: valid in a NATS subject token. */
  next(): string {
    if (this.at + TOKEN_BYTES > this.chunk.length) {
      this.chunk = randomBytes(TOKEN_BYTES * TOKEN_CHUNK_COUNT);
      this.at = 0;
    }
    const token = this.chunk.toString("base64url", this.at, this.at + TOKEN_BYTES);
    this.at += TOKEN_BYTES;
    return token;
  }
}

/**
 * The service a subject calls: the token after the first `svc` (`<prefix>svc.<callee>.<operation>`), or `_` for a
 * subject outside the RPC naming, which only an identity allowed every inbox can answer (the test harness's).
 */
function calleeOf(subject: string): string {
  const tokens = subject.split(".");
  const i = tokens.indexOf("svc");
  return i >= 0 && i + 2 < tokens.length ? (tokens[i + 1] ?? "_") : "_";
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
 *
 * Replies come to `<inbox>.<callee>.<connection>.<token>`: the callee's branch of the connection's inbox, which only
 * that callee may publish into (ADR 0011), and a random token (TokenSource). A reply is taken only on the exact
 * subject its request named, so a callee cannot answer a request sent to another even where the broker would let it.
 */
class RpcClient {
  /** The identity's inbox prefix (`_INBOX_<user>`, or the client's default). */
  private readonly inbox: string;
  /** This connection's part of every reply subject, so that the connections of one identity do not mix replies. */
  private readonly connection: string;
  private readonly tokens = new TokenSource();
  /** `<inbox>.<callee>.<connection>.` by subject called. */
  private readonly branches = new Map<string, string>();
  private readonly pending = new Map<string, Pending>();
  private readonly batches = new Map<string, Batch>();
  /** Requests not sent yet, by subject, until the end of this turn. */
  private readonly queued = new TurnQueue<Queued>((subject, items) => this.send(subject, items));

  constructor(private readonly nc: NatsConnection) {
    this.inbox = inboxPrefix(nc) || "_INBOX";
    this.connection = this.tokens.next();
    nc.subscribe(`${this.inbox}.*.${this.connection}.*`, {
      callback: (err, msg) => {
        if (err) {
          // The inbox subscription itself failed (e.g. a permission error): nothing can be answered.
          this.failAll();
          return;
        }
        const token = msg.subject.slice(msg.subject.lastIndexOf(".") + 1);
        // The server answers a request nobody subscribes to with an empty 503 status message.
        const noResponders = msg.data.length === 0 && msg.headers?.code === 503;
        if (token.startsWith("B")) {
          this.onBatchReply(token, msg, noResponders);
          return;
        }
        const p = this.pending.get(token);
        // A late reply after a timeout, or one on another callee's branch: never the answer to this request.
        if (p === undefined || p.reply !== msg.subject) return;
        this.settle(token, p);
        p.resolve(noResponders ? UNAVAILABLE : replyOutcome(msg));
      },
    });
    void nc.closed().then(() => this.failAll());
  }

  /** The reply subject of a request to `subject`, less its token. */
  private branchOf(subject: string): string {
    let branch = this.branches.get(subject);
    if (branch === undefined) {
      if (this.branches.size >= BRANCHES_MAX) this.branches.clear();
      branch = `${natsInboxBranch(this.inbox, calleeOf(subject))}.${this.connection}.`;
      this.branches.set(subject, branch);
    }
    return branch;
  }

  request(subject: string, data: string, h: RequestHeaders, timeoutMs: number): Promise<Outcome> {
    const token = `R${this.tokens.next()}`;
    const reply = this.branchOf(subject) + token;
    return new Promise<Outcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        const p = this.pending.get(token);
        if (p === undefined) return;
        this.settle(token, p);
        resolve(TIMEOUT);
      }, timeoutMs);
      this.pending.set(token, { reply, resolve, reject, timer });
      if (this.queued.push(subject, { token, reply, data, headers: h }) >= BATCH_SEND_AT) {
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
      this.nc.publish(subject, q.data, { reply: q.reply, headers: asPublishHeaders(q.headers) });
    } catch (e) {
      this.failPublish([q.token], e);
    }
  }

  private publishBatch(subject: string, items: Queued[]): void {
    const batchToken = `B${this.tokens.next()}`;
    const reply = this.branchOf(subject) + batchToken;
    const tokens = items.map((q) => q.token);
    let payload = "";
    for (const q of items) payload += frame(q.token) + frame(q.headers.wire()) + frame(q.data);
    this.batches.set(batchToken, { reply, tokens, open: tokens.length });
    for (const t of tokens) this.pending.get(t)!.batch = batchToken;
    try {
      this.nc.publish(subject, payload, { reply, headers: asPublishHeaders(BATCH_HEADERS) });
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
    // Every request of it has timed out already, or the reply came on another callee's branch.
    if (batch === undefined || batch.reply !== msg.subject) return;
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
