import postgres from "postgres";
import { signalCommitted } from "./outbox-signal.ts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;

/**
 * A pool for one service. int8 and numeric columns stay strings (postgres.js's default, kept on purpose):
 * the store layer parses them into Cents once, with its safe-integer checks, instead of trusting a
 * lossy automatic conversion.
 */
export function createDb(url: string, opts: { max?: number; application_name?: string } = {}): Sql {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    connect_timeout: 10,
    idle_timeout: 60,
    connection: { application_name: opts.application_name ?? "treasury" },
    // NOTICEs (e.g. "relation already exists, skipping") are noise in service logs.
    onnotice: () => {},
  });
  trackPool(sql);
  return sql;
}

/**
 * What a pool's metrics can honestly say about it. postgres.js exposes no pool state, so the kit counts the two
 * ways a caller takes a connection for itself: a transaction (`sql.begin`, which withTx uses) and a reserved
 * connection (`sql.reserve`). Single statements share connections by pipelining and are not counted.
 */
export interface PoolUsage {
  /** The pool's size (its `max` option). */
  readonly max: number;
  /** Connections a transaction or a reservation holds right now. */
  held: number;
  /** Callers asking for a transaction or reservation whose connection is not theirs yet (BEGIN included). */
  waiting: number;
  /** Told how long each caller waited for its connection. */
  readonly acquired: Set<(seconds: number) => void>;
}

const pools = new WeakMap<Sql, PoolUsage>();

/**
 * Counts the pool's held and awaited connections from now on (once per pool; later calls answer the same
 * counts). The pool's `begin` and `reserve` are replaced by wrappers that count and then call the originals.
 */
export function trackPool(sql: Sql): PoolUsage {
  const known = pools.get(sql);
  if (known !== undefined) return known;
  const usage: PoolUsage = { max: sql.options.max, held: 0, waiting: 0, acquired: new Set() };
  pools.set(sql, usage);
  const took = (startedMs: number): void => {
    usage.waiting -= 1;
    usage.held += 1;
    const seconds = (performance.now() - startedMs) / 1000;
    for (const fn of usage.acquired) fn(seconds);
  };
  const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>;
  const trackedBegin = (...args: unknown[]): Promise<unknown> => {
    const fn = args.pop() as (tx: Tx) => unknown;
    const startedMs = performance.now();
    let holding = false;
    usage.waiting += 1;
    // The callback runs once BEGIN has completed on the transaction's own connection; it is held until COMMIT
    // or ROLLBACK has completed, which is when begin() settles.
    return begin(...args, (tx: Tx) => {
      holding = true;
      took(startedMs);
      return fn(tx);
    }).finally(() => {
      if (holding) usage.held -= 1;
      else usage.waiting -= 1;
    });
  };
  const reserve = sql.reserve.bind(sql);
  const trackedReserve = async (): Promise<postgres.ReservedSql> => {
    const startedMs = performance.now();
    usage.waiting += 1;
    let reserved: postgres.ReservedSql;
    try {
      reserved = await reserve();
    } catch (e) {
      usage.waiting -= 1;
      throw e;
    }
    took(startedMs);
    const release = reserved.release.bind(reserved);
    let released = false;
    reserved.release = () => {
      if (!released) usage.held -= 1;
      released = true;
      release();
    };
    return reserved;
  };
  Object.assign(sql, { begin: trackedBegin, reserve: trackedReserve });
  return usage;
}

/**
 * A client of one connection with `pool`'s connection options (server, database, role, password, TLS, session
 * parameters, debug), for work that needs a session of its own, such as holding an advisory lock. Unlike a
 * connection reserved from the pool it may be written to at any time: after its connection closes, the next
 * statement opens a new one, while a reserved connection whose socket closed is lost to its handle: unpatched, its
 * next statement throws an uncatchable error (porsager/postgres#1208); patched (ADR 0010), every later statement
 * fails, since the pool may have reconnected the connection for another caller. No idle timeout and no maximum lifetime, as a reserved connection
 * has none: the session lasts until it fails or the client ends. The caller ends the client.
 */
export function sessionClient(pool: Sql, opts: { application_name?: string; onclose?: () => void } = {}): Sql {
  // postgres() keeps parsed options as they are while they carry the pool's shared state (retry count, type
  // maps); without it they are parsed again like a caller's options, with the same result for everything else.
  const parsed: Record<string, unknown> = { ...pool.options };
  delete parsed["shared"];
  const { connection } = pool.options;
  return postgres({
    ...(parsed as postgres.Options<Record<string, postgres.PostgresType>>),
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    connection: { ...connection, ...(opts.application_name === undefined ? {} : { application_name: opts.application_name }) },
    onclose: opts.onclose ?? (() => {}),
  });
}

export type Isolation = "read committed" | "repeatable read" | "serializable";

/** SQLSTATEs that mean "run the same transaction again": nothing was committed. */
const RETRYABLE_CODES = new Set(["40001", "40P01"]);
const TX_RETRIES_DEFAULT = 5;
const TX_BACKOFF_BASE_MS = 10;
const TX_BACKOFF_MAX_MS = 500;

export function isRetryableTxError(e: unknown): boolean {
  return e instanceof postgres.PostgresError && RETRYABLE_CODES.has(e.code);
}

/** PostgreSQL codes of a server that is restarting, failing over or out of connections: try again shortly. */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** The client's own codes for a connection that broke or could not be made. */
const UNAVAILABLE_CLIENT_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
]);

/**
 * The database could not be reached (restarting, failing over, refusing connections) or the connection broke
 * mid-request: the caller is answered "unavailable, retry with the same key", never an internal error. Work
 * that ran is either committed or rolled back by the server, and every operation that moves money is
 * idempotent, so the retry is safe.
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  if (e instanceof postgres.PostgresError) return e.code.startsWith("08") || UNAVAILABLE_SQLSTATES.has(e.code);
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof code === "string" && UNAVAILABLE_CLIENT_CODES.has(code);
}

function backoffMs(attempt: number): number {
  // Full jitter: concurrent losers of the same conflict must not retry in lockstep.
  return Math.random() * Math.min(TX_BACKOFF_MAX_MS, TX_BACKOFF_BASE_MS * 2 ** attempt);
}

/**
 * Runs `fn` in a transaction, retrying serialization failures and deadlocks a bounded number of times.
 * `fn` may run more than once, so it must not have effects outside the transaction.
 */
export async function withTx<T>(sql: Sql, fn: (tx: Tx) => Promise<T>, opts: { isolation?: Isolation; retries?: number } = {}): Promise<T> {
  const retries = opts.retries ?? TX_RETRIES_DEFAULT;
  const mode = opts.isolation ? `isolation level ${opts.isolation}` : "";
  for (let attempt = 0; ; attempt++) {
    try {
      let txRef: object | undefined;
      const result = (await sql.begin(mode, (tx) => {
        txRef = tx;
        return fn(tx);
      })) as T;
      if (txRef !== undefined) signalCommitted(txRef);
      return result;
    } catch (e) {
      if (!isRetryableTxError(e) || attempt >= retries) throw e;
      await new Promise((r) => setTimeout(r, backoffMs(attempt)));
    }
  }
}

/**
 * A transaction whose BEGIN travels with its first statements. `withTx` waits for BEGIN's answer before the
 * function runs: one round trip that holds nothing yet, but on a hot path whose statements all take locks (risk's
 * counting batches) every round trip is latency its requests wait in. Here the function's first statements are
 * sent right behind BEGIN on a reserved connection, so they cost one round trip with it. The function must send its
 * statements in the order it wants them run (each awaited, or together in one Promise.all); COMMIT follows once it
 * returns, ROLLBACK if it throws, and the connection goes back to the pool either way. Not retried: the caller
 * decides what a failure means.
 */
export async function withPipelinedTx<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const reserved = await sql.reserve();
  // The reserved connection runs statements exactly as a transaction's handle does, savepoints aside.
  const tx = reserved as unknown as Tx;
  const begin = reserved`begin`.execute();
  try {
    const [, result] = await Promise.all([begin, fn(tx)]);
    await reserved`commit`;
    signalCommitted(tx);
    return result;
  } catch (e) {
    await reserved`rollback`.catch(() => undefined);
    throw e;
  } finally {
    reserved.release();
  }
}

/**
 * The URL a service connects with: same cluster and database, the service's own role, and that role's password
 * when it has one (generated and kept as a secret: the dev stack's data folder, a Kubernetes Secret; never derived
 * from the role's name). Without one the role logs in as trust or peer authentication allows.
 */
export function serviceDatabaseUrl(adminUrl: string, service: string, password?: string): string {
  const url = new URL(adminUrl);
  url.username = `${service}_svc`;
  url.password = password === undefined ? "" : encodeURIComponent(password);
  return url.toString();
}
