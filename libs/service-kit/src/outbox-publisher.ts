/**
 * The outbox relay's way to the EVENTS stream (outbox.ts). The relay is built with a publisher; the default is
 * JetStream on the service's connection, and a test passes one that wraps it, e.g. to fail after the broker has
 * stored a batch and before the relay marks it published.
 */
import { jetstream } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import { SpanKind, trace } from "@opentelemetry/api";
import type { Context } from "@opentelemetry/api";
import { NATS_HEADERS } from "@treasury/contracts";
import type { EventEnvelope } from "@treasury/contracts";
import type { Logger } from "pino";
import { extractTraceRecord, injectTraceHeadersFrom, tracer } from "./telemetry.ts";

/** One outbox row on its way to the stream. */
export interface OutboxMessage {
  subject: string;
  envelope: EventEnvelope;
  /** What the row stored with the event: the request id, and the trace context its publish continues. */
  headers: Record<string, string>;
}

export interface EventPublisher {
  /**
   * Sends a batch to the stream in order (each message's Nats-Msg-Id is its event id) and resolves once the
   * broker has stored every one. Rejects when any publish fails; the relay then marks none of the batch.
   */
  publish(batch: readonly OutboxMessage[]): Promise<void>;
}

function messageHeaders(m: OutboxMessage, traceCtx: Context): MsgHdrs {
  const h = headers();
  for (const [k, v] of Object.entries(m.headers)) {
    if (k !== NATS_HEADERS.traceparent && k !== NATS_HEADERS.tracestate) h.set(k, v);
  }
  // The publish span (child of the stored request context) becomes the consumer's parent.
  injectTraceHeadersFrom(traceCtx, h);
  return h;
}

/** Publishes with JetStream on `nc`, one PRODUCER span per event. */
export function jetStreamPublisher(nc: NatsConnection, log: Logger): EventPublisher {
  const js = jetstream(nc);
  const publishOne = async (m: OutboxMessage): Promise<void> => {
    const parent = extractTraceRecord(m.headers);
    const span = tracer().startSpan(`publish ${m.envelope.type}`, { kind: SpanKind.PRODUCER }, parent);
    try {
      const ack = await js.publish(m.subject, JSON.stringify(m.envelope), { msgID: m.envelope.id, headers: messageHeaders(m, trace.setSpan(parent, span)) });
      if (ack.duplicate) log.info({ event_id: m.envelope.id }, "event already in stream; broker de-duplicated the republish");
    } finally {
      span.end();
    }
  };
  return {
    // Pipelined: all of the batch's publishes go out on the one connection before the first ack comes back,
    // so the broker stores them in this order.
    publish: async (batch) => void (await Promise.all(batch.map(publishOne))),
  };
}
