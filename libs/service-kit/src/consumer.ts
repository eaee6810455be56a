import { AckPolicy, DeliverPolicy, jetstream, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import type { Consumer, ConsumerConfig, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Span } from "@opentelemetry/api";
import { EventEnvelope, eventsStreamName, NATS_HEADERS, newRequestId } from "@treasury/contracts";
import type { Logger } from "pino";
import { withTx } from "./db.ts";
import type { Sql, Tx } from "./db.ts";
import { claimInbox } from "./inbox.ts";
import { runInRequestContext } from "./context.ts";
import { extractTraceContext, tracer } from "./telemetry.ts";

/** Where an event came from: its subject, whose publishers the NATS permissions restrict (ADR 0011). */
export interface EventDelivery {
  subject: string;
  /** The event's sequence in the EVENTS stream: the order events were published in, across every owner. */
  streamSeq: number;
}

export type EventHandler = (evt: EventEnvelope, tx: Tx, delivery: EventDelivery) => Promise<void>;

export interface EventConsumerOptions {
  nc: NatsConnection;
  sql: Sql;
  schema: string;
  prefix: string;
  durable: string;
  filterSubject: string;
  log: Logger;
  handler: EventHandler;
  maxAckPending?: number;
  /**
   * How long the broker waits for the ack of a delivered event before it delivers it again (default 10 s):
   * the time an event pulled by a process that died waits before another process gets it. A handler that runs
   * longer is not redelivered meanwhile: the consumer tells the broker it is still working on the event.
   */
  ackWaitMs?: number;
  /** Told of each event the broker delivers again (its delivery count above 1): the service's metrics. */
  onRedelivery?: () => void;
}

const ACK_WAIT_MS_DEFAULT = 10_000;
const MAX_ACK_PENDING_DEFAULT = 256;
/** Messages pulled ahead of processing; small, because stop() hands unstarted ones back to the broker. */
const PULL_BATCH_MAX = 16;
const NAK_DELAY_BASE_MS = 1000;
const NAK_DELAY_MAX_MS = 60_000;

function nakDelayMs(deliveryCount: number): number {
  return Math.min(NAK_DELAY_MAX_MS, NAK_DELAY_BASE_MS * 2 ** Math.max(0, deliveryCount - 1));
}

/**
 * A durable pull consumer on the EVENTS stream. Each event is handled in one database transaction that also
 * claims its id in the inbox, and acknowledged only after that commits: a crash before the ack means a
 * redelivery, which the inbox turns into a no-op. Events are processed one at a time, in stream order.
 */
export class EventConsumer {
  readonly durable: string;
  private readonly opts: EventConsumerOptions;
  private consumer: Consumer | undefined;
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private stopping = false;

  constructor(opts: EventConsumerOptions) {
    this.opts = opts;
    this.durable = opts.durable;
  }

  async start(): Promise<void> {
    if (this.messages) return;
    this.stopping = false;
    const stream = eventsStreamName(this.opts.prefix);
    await this.ensureDurable(stream);
    this.consumer = await jetstream(this.opts.nc).consumers.get(stream, this.opts.durable);
    const messages = await this.consumer.consume({ max_messages: Math.min(PULL_BATCH_MAX, this.maxAckPending()) });
    this.messages = messages;
    this.loop = this.run(messages);
  }

  /** Stops pulling, finishes the event in progress and hands pulled-but-unstarted ones back for redelivery. */
  async stop(): Promise<void> {
    if (!this.messages) return;
    this.stopping = true;
    void this.messages.close();
    await this.loop;
    this.messages = undefined;
  }

  /**
   * The durable's ack floor: every event at or below this stream sequence has been handled and its transaction
   * committed (events are acknowledged after their commit). 0 before the consumer has started.
   */
  async ackFloor(): Promise<number> {
    if (!this.consumer) return 0;
    return (await this.consumer.info()).ack_floor.stream_seq;
  }

  /** Events not yet acknowledged: waiting in the stream plus delivered and unacknowledged. */
  async pending(): Promise<number> {
    if (!this.consumer) return 0;
    const info = await this.consumer.info();
    return info.num_pending + info.num_ack_pending;
  }

  private maxAckPending(): number {
    return this.opts.maxAckPending ?? MAX_ACK_PENDING_DEFAULT;
  }

  private ackWaitMs(): number {
    return this.opts.ackWaitMs ?? ACK_WAIT_MS_DEFAULT;
  }

  private async ensureDurable(stream: string): Promise<void> {
    const jsm = await jetstreamManager(this.opts.nc);
    const updatable = {
      ack_wait: nanos(this.ackWaitMs()),
      max_deliver: -1,
      max_ack_pending: this.maxAckPending(),
      filter_subject: this.opts.filterSubject,
    } satisfies Partial<ConsumerConfig>;
    try {
      // Creating with an identical configuration is a no-op, so every replica may do it.
      await jsm.consumers.add(stream, {
        durable_name: this.opts.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ...updatable,
      });
    } catch (e) {
      if (!(e instanceof JetStreamApiError)) throw e;
      await jsm.consumers.update(stream, this.opts.durable, updatable);
    }
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        if (this.stopping) m.nak();
        else await this.process(m);
      }
    } catch (err) {
      this.opts.log.error({ err, durable: this.opts.durable }, "event consumer stopped unexpectedly");
    }
  }

  private async process(m: JsMsg): Promise<void> {
    if (m.info.deliveryCount > 1) this.opts.onRedelivery?.();
    const evt = this.decode(m);
    if (!evt) return;
    const requestId = m.headers?.get(NATS_HEADERS.requestId) || newRequestId();
    const parent = extractTraceContext(m.headers);
    const span = tracer().startSpan(`consume ${evt.type}`, { kind: SpanKind.CONSUMER }, parent);
    await runInRequestContext(requestId, trace.setSpan(parent, span), () => this.handle(m, evt, span));
  }

  private decode(m: JsMsg): EventEnvelope | undefined {
    let raw: unknown;
    try {
      raw = m.json<unknown>();
    } catch {
      raw = undefined;
    }
    const parsed = EventEnvelope.safeParse(raw);
    if (parsed.success) return parsed.data;
    // A malformed event can never succeed; redelivering it forever would only block the consumer.
    this.opts.log.error({ durable: this.opts.durable, stream_seq: m.seq }, "dropping malformed event");
    m.term("malformed event envelope");
    return undefined;
  }

  private async handle(m: JsMsg, evt: EventEnvelope, span: Span): Promise<void> {
    const { sql, schema, durable, handler, log } = this.opts;
    // "Still working" while the handler runs, so a slow transaction does not make the broker deliver the event
    // again; only a process that died stops sending it, and then the event comes back after the ack wait.
    const heartbeat = setInterval(
      () => {
        try {
          m.working();
        } catch {
          // The connection is closing: the ack wait decides, as it does for a process that died.
        }
      },
      Math.max(100, Math.floor(this.ackWaitMs() / 3)),
    );
    try {
      await withTx(sql, async (tx) => {
        if (await claimInbox(tx, schema, durable, evt.id)) await handler(evt, tx, { subject: m.subject, streamSeq: m.seq });
        else log.debug({ event_id: evt.id, durable }, "event already processed; skipping");
      });
      m.ack();
    } catch (err) {
      const delay = nakDelayMs(m.info.deliveryCount);
      log.error({ err, event_id: evt.id, durable, retry_in_ms: delay }, "event handler failed; it will be redelivered");
      span.recordException(err instanceof Error ? err : new Error(String(err)));
      span.setStatus({ code: SpanStatusCode.ERROR });
      m.nak(delay);
    } finally {
      clearInterval(heartbeat);
      span.end();
    }
  }
}
