import { jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { StreamConfig } from "@nats-io/jetstream";
import { connect, nanos } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { EVENTS_DUPLICATE_WINDOW_MS, EVENTS_MAX_AGE_MS, eventsStreamName, eventsSubjectFilter } from "@treasury/contracts";

export type { NatsConnection };

/** JetStream answers this when a stream name exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;

export async function connectNats(opts: { url: string; name: string }): Promise<NatsConnection> {
  return connect({
    servers: opts.url,
    name: opts.name,
    // A service outlives broker restarts: keep reconnecting instead of dying after the default 10 attempts.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    // The client would otherwise build two Error objects (stack captures) for every request it sends, in
    // case the request times out: a measurable share of the gateway's CPU per request.
    noAsyncTraces: true,
  });
}

/**
 * Creates the EVENTS stream of a prefix, or brings an existing one to the current limits and replica count.
 * `replicas` (EVENTS_REPLICAS) is 1 on a single server; on a JetStream cluster 3 keeps every event on three
 * servers, and an existing stream with fewer replicas is raised to it (JetStream copies the messages over).
 */
export async function ensureEventsStream(nc: NatsConnection, prefix: string, opts: { replicas?: number } = {}): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const name = eventsStreamName(prefix);
  const limits = {
    subjects: [eventsSubjectFilter(prefix)],
    max_age: nanos(EVENTS_MAX_AGE_MS),
    duplicate_window: nanos(EVENTS_DUPLICATE_WINDOW_MS),
    num_replicas: opts.replicas ?? 1,
  } satisfies Partial<StreamConfig>;
  try {
    // Adding with an identical configuration is a no-op on the server, so replicas may all do it.
    await jsm.streams.add({ name, retention: RetentionPolicy.Limits, storage: StorageType.File, ...limits });
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === STREAM_NAME_IN_USE)) throw e;
    await jsm.streams.update(name, limits);
  }
}
