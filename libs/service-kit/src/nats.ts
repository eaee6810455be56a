import { jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { StreamConfig } from "@nats-io/jetstream";
import { connect, nanos } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { EVENTS_DUPLICATE_WINDOW_MS, EVENTS_MAX_AGE_MS, eventsStreamName, eventsSubjectFilter, natsInboxPrefix } from "@treasury/contracts";
import { ConfigError } from "./config.ts";
import type { BaseConfig } from "./config.ts";

export type { NatsConnection };

/** JetStream answers this when a stream name exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
/** JetStream answers this when no stream has the name. */
const STREAM_NOT_FOUND = 10059;
/** JetStream "temporarily unavailable" (10008) and "error creating store for stream" (10077). */
const TRANSIENT_STREAM_ERRORS = new Set([10008, 10077]);
const STREAM_ADD_ATTEMPTS = 5;

export interface NatsConnectOptions {
  /** `nats://host:port`, `tls://host:port` (TLS required), or either with `user:password@` credentials. */
  url: string;
  name: string;
  /** The connection's NATS identity; wins over credentials in the URL. */
  user?: string | undefined;
  password?: string | undefined;
  /** PEM files: the CA that signed the server's certificate, a client certificate and its key. */
  tls?: { caFile?: string | undefined; certFile?: string | undefined; keyFile?: string | undefined } | undefined;
}

/**
 * Server addresses and credentials of a NATS URL: the client library reads no credentials from URLs itself. A
 * JetStream cluster is named by its nodes' URLs, comma-separated (`nats://a:4222,nats://b:4222`): `server` keeps
 * them all, without credentials, and the credentials (and TLS) are the first URL's.
 */
export function parseNatsUrl(url: string): { server: string; user?: string; password?: string; tls: boolean } {
  const urls = url.split(",").map((s) => s.trim());
  const first = urls[0] ?? "";
  if (!/^[a-z]+:\/\//i.test(first)) return { server: url, tls: false };
  const bare = (each: string): string => {
    if (!/^[a-z]+:\/\//i.test(each)) return each;
    const u = new URL(each);
    return `${u.protocol}//${u.host}`;
  };
  const u = new URL(first);
  const server = urls.map(bare).join(",");
  const tls = u.protocol === "tls:";
  if (u.username === "") return { server, tls };
  return { server, user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), tls };
}

/**
 * Connects as one identity (ADR 0011). Its replies come to `_INBOX_<user>`, the one inbox its permissions let it
 * read, so no other identity can read them; without a user the client's default inbox is used.
 */
export async function connectNats(opts: NatsConnectOptions): Promise<NatsConnection> {
  const parsed = parseNatsUrl(opts.url);
  const user = opts.user ?? parsed.user;
  const pass = opts.user !== undefined ? opts.password : parsed.password;
  const files = Object.fromEntries(Object.entries(opts.tls ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>;
  // An empty TLS object asks the client to require TLS with the system's CAs.
  const tls = parsed.tls || Object.keys(files).length > 0 ? { tls: files } : {};
  return connect({
    // The client takes a list, not a comma-separated string: every node of a cluster is a server to try.
    servers: parsed.server.split(","),
    name: opts.name,
    ...(user !== undefined ? { user, pass: pass ?? "", inboxPrefix: natsInboxPrefix(user) } : {}),
    ...tls,
    // A service outlives broker restarts: keep reconnecting instead of dying after the default 10 attempts, and a
    // service starting while the broker restarts waits for it like one already running would (wrong credentials
    // still fail at once: the client gives up on repeated authorization errors).
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
    reconnectTimeWait: 1000,
    // The client would otherwise build two Error objects (stack captures) for every request it sends, in
    // case the request times out: a measurable share of the gateway's CPU per request.
    noAsyncTraces: true,
  });
}

/** A service's connection options from its configuration; incomplete pairs are configuration errors. */
export function natsConnectOptions(config: BaseConfig, name: string): NatsConnectOptions {
  const problems: string[] = [];
  if ((config.NATS_USER === undefined) !== (config.NATS_PASSWORD === undefined)) problems.push("NATS_USER / NATS_PASSWORD: set both or neither");
  if ((config.NATS_TLS_CERT === undefined) !== (config.NATS_TLS_KEY === undefined)) problems.push("NATS_TLS_CERT / NATS_TLS_KEY: set both or neither");
  if (problems.length > 0) throw new ConfigError(problems);
  const tls =
    config.NATS_TLS_CA !== undefined || config.NATS_TLS_CERT !== undefined
      ? { caFile: config.NATS_TLS_CA, certFile: config.NATS_TLS_CERT, keyFile: config.NATS_TLS_KEY }
      : undefined;
  return { url: config.NATS_URL, name, user: config.NATS_USER, password: config.NATS_PASSWORD, tls };
}

/** How long a service waits at start for the migrate step to create the EVENTS stream, and how often it asks. */
const STREAM_WAIT_MAX_MS = 300_000;
const STREAM_WAIT_POLL_MAX_MS = 5_000;

/**
 * Waits until the EVENTS stream of a prefix exists: the migrate step creates it (ensureEventsStream, as the
 * `migrations` identity; ADR 0011), and a service may only read its info. While it is missing the service says so
 * and asks again; after STREAM_WAIT_MAX_MS it gives up starting. A stream with fewer replicas than EVENTS_REPLICAS
 * is logged: the migrate step raises it.
 */
export async function awaitEventsStream(
  nc: NatsConnection,
  prefix: string,
  opts: { replicas: number; log: { info(o: object, m: string): void; warn(o: object, m: string): void } },
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const stream = eventsStreamName(prefix);
  const deadline = Date.now() + STREAM_WAIT_MAX_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      const info = await jsm.streams.info(stream);
      const replicas = info.config.num_replicas ?? 1;
      if (replicas < opts.replicas)
        opts.log.warn({ stream, replicas, wanted: opts.replicas }, "EVENTS stream has fewer replicas than EVENTS_REPLICAS; run the migrate step");
      return;
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND)) throw e;
      if (Date.now() >= deadline) throw new Error(`EVENTS stream ${stream} does not exist: run the migrate step (npm run migrate), which creates it`);
      opts.log.info({ stream, attempt }, "EVENTS stream does not exist yet; waiting for the migrate step to create it");
      await new Promise((r) => setTimeout(r, Math.min(STREAM_WAIT_POLL_MAX_MS, 250 * 2 ** attempt)));
    }
  }
}

/**
 * The migrate step's work on NATS: connects as `opts` (the `migrations` identity wherever NATS has authorization),
 * creates or updates the EVENTS stream of `prefix` (ensureEventsStream), and disconnects.
 */
export async function migrateEventsStream(opts: NatsConnectOptions, prefix: string, replicas = 1): Promise<void> {
  const nc = await connectNats(opts);
  try {
    await ensureEventsStream(nc, prefix, { replicas });
  } finally {
    await nc.close();
  }
}

/**
 * Creates the EVENTS stream of a prefix, or brings an existing one to the current limits and replica count: the
 * migrate step's work, as the `migrations` identity, the only one allowed to (ADR 0011).
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
  for (let attempt = 1; ; attempt++) {
    try {
      // Adding with an identical configuration is a no-op on the server, so replicas may all do it.
      await jsm.streams.add({ name, retention: RetentionPolicy.Limits, storage: StorageType.File, ...limits });
      return;
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === STREAM_NAME_IN_USE) {
        await jsm.streams.update(name, limits);
        return;
      }
      // A server that could not create the stream's store just now, or whose JetStream is briefly unavailable
      // (a cluster electing its meta leader), is asked again a few times before the migrate step gives up.
      const transient = e instanceof JetStreamApiError && TRANSIENT_STREAM_ERRORS.has(e.code);
      if (!transient || attempt >= STREAM_ADD_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}
