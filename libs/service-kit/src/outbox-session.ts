/**
 * What the outbox relay needs to know about its database session and its time: whether a session has ended
 * (and with it the relay's lock), how pipelined statements settle, and the clock it waits on.
 */
/** The relay's clock: how it reads the time (the lock check's schedule) and how it waits (polls, back-off). */
export interface RelayClock {
  now(): number;
  /** Calls `fn` once after `ms`; the function returned cancels that. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: RelayClock = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

export interface NumberResult {
  /** Rows given their sequence by this statement. */
  numbered: number;
  /** Numbered rows were still unpublished, so nothing new was numbered. */
  blocked: boolean;
}

export interface CycleResult extends NumberResult {
  published: number;
}

/** Awaits statements sent together (pipelined) and throws the first error once all of them have answered. */
export async function settled<T extends readonly unknown[]>(promises: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const results = await Promise.allSettled(promises);
  const errors = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
  // A lost session fails every statement behind the one that saw it end; that is the error to act on.
  if (errors.length > 0) throw errors.find(sessionLost) ?? errors[0];
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

/** The relay's statements ran on a new session: the one that held the lock has ended, and its transaction with it. */
export class SessionReplaced extends Error {
  constructor() {
    super("outbox relay statements ran on a new database session; the one that held the lock has ended");
  }
}

/**
 * The session behind a connection has ended: postgres.js's closed-connection errors, socket errors, the
 * server's FATAL errors (terminated backend, shutdown, session timeouts), after which it closes the connection,
 * and statements the relay finds ran on a new session.
 */
export function sessionLost(e: unknown): boolean {
  if (e instanceof SessionReplaced) return true;
  if (typeof e !== "object" || e === null) return false;
  const { code, severity } = e as { code?: unknown; severity?: unknown };
  if (severity === "FATAL" || severity === "PANIC") return true;
  return typeof code === "string" && (code.startsWith("CONNECTION_") || ["ECONNRESET", "EPIPE", "ETIMEDOUT"].includes(code));
}

export function firstRow(rows: readonly NumberResult[]): NumberResult {
  const [row] = rows;
  if (row === undefined) throw new Error("outbox numbering statement returned no row");
  return row;
}
