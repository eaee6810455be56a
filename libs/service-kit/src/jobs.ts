/**
 * Work a service repeats while it runs (reconciler passes, re-sealing, checks, clean-ups): the one mechanism,
 * registered with `svc.every(…)`, started when the service is ready and stopped on shutdown after the pass in
 * progress. A pass that fails is logged and the next one runs on time; passes never overlap; the timer does not
 * keep the process alive.
 *
 * A job that must run on one replica at a time says `leader: true`: a pass runs only on the replica whose own
 * PostgreSQL session holds the job's advisory lock. The holder keeps it while that session lasts; the others try
 * at each interval and take over when it ends (a crash ends the session, and with it the lock).
 */
import type { Logger } from "pino";
import { sessionClient, type Sql } from "./db.ts";

/** What a leader's pass gets: the session that holds the lock (reads there cost no pool connection). */
export interface LeaderSession {
  session: Sql;
  /** Ends the session and with it the lock (a pass past its deadline gives the work up this way). */
  resign(): Promise<void>;
}

export interface JobSpec<T> {
  /** Names the job in logs and, for a leader job, its lock (`<service>.<name>`). */
  name: string;
  /** Milliseconds between the end of one pass and the start of the next; 0 turns the loop off (runOnce still works). */
  intervalMs: number;
  /**
   * One pass. `signal` aborts when the job stops (the service shuts down): a long pass ends between two of its
   * units of work instead of running to its end.
   */
  run: (leader: LeaderSession | undefined, signal: AbortSignal) => Promise<T>;
  /** Runs on one replica at a time (see above). */
  leader?: boolean;
  /** Called when a leader job's pass is skipped because another replica holds the lock. */
  onNotLeader?: () => void;
  /** Runs a pass as soon as an org's sandbox clock moves (clock.ts): work that became due runs within seconds. */
  wakeOnClock?: boolean;
}

/** One PostgreSQL session holding (or trying to hold) an advisory lock for as long as it lasts. */
export class Leadership {
  private db: Sql | undefined;

  constructor(
    private readonly pool: Sql,
    private readonly key: string,
  ) {}

  /** The session when this replica holds the lock already or takes it now; undefined when another one holds it. */
  async acquire(): Promise<Sql | undefined> {
    const db = (this.db ??= sessionClient(this.pool, { application_name: `leader ${this.key}` }));
    // CASE evaluates in order: a session that holds the lock does not take it a second time (it would need two unlocks).
    const [row] = await db<{ leader: boolean }[]>`
      select case when exists (
          select 1 from pg_locks, (select hashtext(${this.key})::bigint as k) key
          where locktype = 'advisory' and pid = pg_backend_pid() and granted and objsubid = 1
            and classid::bigint = (key.k >> 32) & 4294967295 and objid::bigint = key.k & 4294967295)
        then true else pg_try_advisory_lock(hashtext(${this.key})) end as leader`;
    return row?.leader === true ? db : undefined;
  }

  /** Ends the session: the lock goes with it, and another replica may take it. */
  async release(): Promise<void> {
    const db = this.db;
    this.db = undefined;
    await db?.end({ timeout: 1 });
  }
}

export class Job<T> {
  private timer: NodeJS.Timeout | undefined;
  /** The end of the last pass asked for (never rejects); undefined when none is running or waiting. */
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly leadership: Leadership | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly spec: JobSpec<T>,
    private readonly log: Logger,
    pool: Sql,
    lockPrefix: string,
  ) {
    this.leadership = spec.leader === true ? new Leadership(pool, `${lockPrefix}.${spec.name}`) : undefined;
  }

  get name(): string {
    return this.spec.name;
  }

  start(): void {
    if (!this.stopped || this.spec.intervalMs === 0) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops the loop, waits for the pass in progress, and gives up the lock of a leader job. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopping.abort();
    await this.running;
    await this.leadership?.release();
  }

  /**
   * One pass that starts after this call (tests, operators): after the pass in progress, if any, so that passes
   * never overlap and the caller's pass sees everything done before it asked. A leader job answers undefined
   * when another replica holds its lock. A failing pass rejects here (the loop logs it instead).
   */
  runOnce(): Promise<T | undefined> {
    const previous = this.running?.catch(() => undefined) ?? Promise.resolve();
    const next = previous.then(() => this.pass());
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.running = tail;
    void tail.then(() => {
      if (this.running === tail) this.running = undefined;
    });
    return next;
  }

  private async pass(): Promise<T | undefined> {
    const leadership = this.leadership;
    const signal = this.stopping.signal;
    if (leadership === undefined) return this.spec.run(undefined, signal);
    const session = await leadership.acquire();
    if (session === undefined) {
      this.spec.onNotLeader?.();
      return undefined;
    }
    return this.spec.run({ session, resign: () => leadership.release() }, signal);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.runOnce()
        .catch((err: unknown) => {
          if (!this.stopped) this.log.error({ err, job: this.spec.name }, `${this.spec.name} pass failed; it runs again at the next interval`);
        })
        .finally(() => this.schedule());
    }, this.spec.intervalMs);
    this.timer.unref();
  }
}

/**
 * One reconciler step: drives each row a pass found stuck. A row that fails is logged (under `idField`, the name
 * an on-call engineer searches the logs by, with the error's message) and left for the next pass, so one stuck row
 * never stops the others. Answers how many were driven.
 */
export async function driveEach<R extends { id: string }>(
  log: Logger,
  what: { noun: string; idField: string },
  rows: readonly R[],
  drive: (row: R) => Promise<{ status: string }>,
): Promise<number> {
  let driven = 0;
  for (const row of rows) {
    try {
      const done = await drive(row);
      log.info({ [what.idField]: row.id, status: done.status }, `reconciler drove a ${what.noun}`);
      driven++;
    } catch (err) {
      // The message only: an error object from a client (a card processor's, say) can carry a request's headers.
      const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      log.warn({ error, [what.idField]: row.id }, `reconciler could not drive a ${what.noun} yet`);
    }
  }
  return driven;
}
