import type { NatsConnection } from "@nats-io/transport-node";
import { eventSubject } from "@treasury/contracts";
import type { EventEnvelope, EventType } from "@treasury/contracts";
import type postgres from "postgres";
import type { Logger } from "pino";
import { sessionClient } from "./db.ts";
import type { Sql } from "./db.ts";
import { jetStreamPublisher } from "./outbox-publisher.ts";
import type { EventPublisher, OutboxMessage } from "./outbox-publisher.ts";
import { firstRow, SessionReplaced, sessionLost, settled, systemClock } from "./outbox-session.ts";
import type { CycleResult, NumberResult, RelayClock } from "./outbox-session.ts";
import { onOutboxCommitted } from "./outbox-signal.ts";

/** What an outbox row keeps in `payload`: the event data and, once the relay assigns it, the sequence. */
interface StoredPayload {
  data: Record<string, unknown>;
  sequence?: number | string;
}

interface OutboxRow {
  seq: string;
  id: string;
  org_id: string;
  livemode: boolean;
  type: string;
  payload: StoredPayload;
  headers: Record<string, string>;
  created_at: Date;
}

export interface OutboxRelayOptions {
  /** The service's pool. The relay's own session is a client of one connection with the same options. */
  sql: Sql;
  nc: NatsConnection;
  schema: string;
  prefix: string;
  source: string;
  log: Logger;
  batchSizeMax?: number;
  pollIntervalMs?: number;
  /**
   * After a commit signal, how long the relay waits before its cycle so that commits arriving together go out
   * in one batch (one pass over the database instead of one per commit). 0 disables it.
   */
  coalesceMs?: number;
  /** How often the leader re-checks that its session still holds the advisory lock. */
  lockCheckIntervalMs?: number;
  /** Told how many events a cycle published once they are marked published (the service's metrics). */
  onPublished?: (count: number) => void;
}

/** What the relay works with beyond its options; each default is the production one. */
export interface OutboxRelayDeps {
  /** Default: JetStream on `opts.nc` (outbox-publisher.ts). */
  publisher?: EventPublisher;
  /** Default: the system's clock and timers. */
  clock?: RelayClock;
}

const BATCH_SIZE_MAX_DEFAULT = 100;
// Short: the fallback for rows committed outside withTx or by another replica (no NOTIFY: see outbox-signal.ts).
const POLL_INTERVAL_MS_DEFAULT = 100;
const COALESCE_MS_DEFAULT = 0;
const LOCK_CHECK_INTERVAL_MS_DEFAULT = 1000;
const BACKOFF_MAX_MS = 30_000;

/**
 * Publishes a service's outbox to JetStream. One relay per service does the work: it holds a session
 * advisory lock on a connection of its own; other replicas retry the lock periodically and take over when
 * the holder's session ends.
 *
 * That connection is the relay's own client of one connection (sessionClient), not one reserved from the
 * service's pool: postgres.js throws an uncatchable error when a reserved connection writes after its socket
 * closed (porsager/postgres#1208), as the next statement would after the session died while the relay waited
 * between statements. The client opens a new session for that statement instead, so a session can be replaced
 * under the relay without an error, and the lock went with the old one. Hence the relay stops leading as soon as
 * the client reports the connection closed, every statement that reads or changes outbox rows only acts on the
 * session whose backend took the lock (pg_backend_pid), and the lock itself is re-checked every
 * `lockCheckIntervalMs` and after any failure: a relay that lost its session publishes again only once it
 * holds the lock again.
 *
 * All of the leader's statements run on that connection, pipelined, so a cycle costs few round trips: (1) the
 * numbering statement (autocommit), sent together with BEGIN and the SELECT ... FOR UPDATE SKIP LOCKED of the
 * rows to publish when a commit signal says rows are waiting (after a quiet poll the numbering statement goes
 * alone first, so an idle poll is one round trip); (2) the publishes; (3) the UPDATE that marks them, sent
 * together with COMMIT. Any error on the connection ends the cycle; if the connection cannot even roll back,
 * the relay gives up the lock and starts over with a fresh session.
 *
 * Sequences: rows get their per-(org, livemode) sequence in a committed step of their own, before any
 * publish, so a republish after a crash carries the same number. New numbers are handed out only when every
 * numbered row is published (the numbering statement checks it itself), so rows are always published in
 * sequence order within an org.
 *
 * The publish transaction spans network calls on purpose: it locks only unpublished outbox rows (writers
 * only insert), and it lets "publish, then mark" be all-or-nothing from the database's point of view.
 */
export class OutboxRelay {
  private readonly opts: OutboxRelayOptions;
  private readonly batchSizeMax: number;
  private readonly pollIntervalMs: number;
  private readonly coalesceMs: number;
  private readonly lockCheckIntervalMs: number;
  private readonly lockKey: string;
  private readonly publisher: EventPublisher;
  private readonly clock: RelayClock;
  /** The relay's own client of one connection (created on first use, ended by stop()). */
  private db: Sql | undefined;
  /** Backend pid of the session that took the lock. */
  private pid = 0;
  /** The last session ended; the next one may have begun a transaction of the old one's statements. */
  private replaced = false;
  /** When the leader last saw that it holds the lock (0: check on the next round). */
  private lockCheckedAt = 0;
  private unsubscribe: (() => void) | undefined;
  private leader = false;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private woken = false;
  private interrupt: (() => void) | undefined;

  constructor(opts: OutboxRelayOptions, deps: OutboxRelayDeps = {}) {
    this.opts = opts;
    this.batchSizeMax = opts.batchSizeMax ?? BATCH_SIZE_MAX_DEFAULT;
    this.pollIntervalMs = opts.pollIntervalMs ?? POLL_INTERVAL_MS_DEFAULT;
    this.coalesceMs = opts.coalesceMs ?? COALESCE_MS_DEFAULT;
    this.lockCheckIntervalMs = opts.lockCheckIntervalMs ?? LOCK_CHECK_INTERVAL_MS_DEFAULT;
    this.lockKey = `${opts.schema}.outbox_relay`;
    this.publisher = deps.publisher ?? jetStreamPublisher(opts.nc, opts.log);
    this.clock = deps.clock ?? systemClock;
  }

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.unsubscribe = onOutboxCommitted(this.opts.schema, () => this.wake());
    // Trying once here lets callers (and tests) see who leads right after start; failures are retried by run().
    await this.tryLead().catch((err: unknown) => this.opts.log.warn({ err }, "outbox relay could not try the lock yet"));
    this.loop = this.run();
  }

  /** Finishes the cycle in progress, then gives up the lock so another replica can take over at once. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.interrupt?.();
    await this.loop;
    this.unsubscribe?.();
    await this.releaseLock();
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** Age in seconds of the oldest unpublished row (0 when all are published). */
  async lagSeconds(): Promise<number> {
    const [row] = await this.opts.sql<{ lag: number }[]>`
      select extract(epoch from now() - created_at)::float8 as lag from ${this.opts.sql(`${this.opts.schema}.outbox`)}
      where published_at is null order by seq limit 1`;
    return row ? Math.max(0, row.lag) : 0;
  }

  private wake(): void {
    this.woken = true;
    if (this.leader) this.interrupt?.();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.tryLead();
        if (this.leader) await this.publishBacklog();
        failures = 0;
        await this.sleep(this.pollIntervalMs, this.leader);
      } catch (err) {
        failures += 1;
        this.opts.log.error({ err, failures }, "outbox relay cycle failed; rows stay unpublished and will be retried");
        const ms = Math.min(BACKOFF_MAX_MS, this.pollIntervalMs * 2 ** Math.min(failures, 10));
        await this.sleep(ms * (0.5 + Math.random() / 2), false);
      }
    }
  }

  /** Sleeps up to `ms`; stop() always interrupts, a commit signal only when `wakeable`. */
  private sleep(ms: number, wakeable: boolean): Promise<void> {
    if (this.stopped || (wakeable && this.woken)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        cancel();
        this.interrupt = undefined;
        resolve();
      };
      const cancel = this.clock.after(ms, done);
      this.interrupt = () => {
        if (this.stopped || wakeable) done();
      };
    });
  }

  /**
   * Cycles until the outbox is drained: another cycle follows at once only when the last one may have left
   * rows behind (a full batch, or numbering held back by rows it had to publish first) or a commit signal
   * arrived while it ran. A signal means rows are waiting, so that cycle pipelines everything it can.
   */
  private async publishBacklog(): Promise<void> {
    let expectRows = false;
    while (!this.stopped && this.leader) {
      if (this.woken) {
        expectRows = true;
        if (this.coalesceMs > 0) {
          await this.sleep(this.coalesceMs, false);
          if (this.stopped) return;
        }
      }
      this.woken = false;
      const c = await this.cycle(expectRows);
      const more = c.published >= this.batchSizeMax || c.numbered >= this.batchSizeMax || (c.blocked && c.published > 0);
      if (!more && !this.woken) return;
      expectRows = more;
    }
  }

  private table(name: string): postgres.Helper<string> {
    return this.opts.sql(`${this.opts.schema}.${name}`);
  }

  /**
   * One batch on the leader's connection: number the next rows (committed on its own), then in one
   * transaction lock the numbered rows, publish them and mark them published.
   */
  private async cycle(expectRows: boolean): Promise<CycleResult> {
    const conn = this.db;
    if (conn === undefined) throw new Error("outbox relay has no connection");
    let open = false;
    let rows: OutboxRow[] = [];
    try {
      let num: NumberResult;
      if (expectRows) {
        open = true;
        const [n, , selected] = await settled([this.numberRows(conn).execute(), conn`begin`.execute(), this.selectRows(conn).execute()]);
        num = firstRow(n);
        rows = selected;
      } else {
        num = firstRow(await this.numberRows(conn));
        if (num.numbered === 0 && !num.blocked) return { ...num, published: 0 };
        open = true;
        const [, selected] = await settled([conn`begin`.execute(), this.selectRows(conn).execute()]);
        rows = selected;
      }
      if (rows.length === 0) {
        open = false;
        await conn`commit`;
        return { ...num, published: 0 };
      }
      // The session closed since the SELECT: its row locks are gone, another relay may be taking the lock.
      if (!this.leader) throw new SessionReplaced();
      // If one publish fails the batch is not marked and is republished whole (same ids: the broker drops
      // the copies); only then can a later event of the batch reach the stream before the failed one, and
      // consumers order by `sequence`.
      await this.publisher.publish(rows.map((row) => this.message(row)));
      const seqs = rows.map((r) => r.seq);
      open = false;
      const [marked, commit] = await settled([
        conn`update ${this.table("outbox")} set published_at = now(), attempts = attempts + 1
             where seq = any(${seqs}::int8[]) and pg_backend_pid() = ${this.pid}`.execute(),
        conn`commit`.execute(),
      ]);
      // The rows are locked by this transaction, so only a new session marks fewer (none) of them.
      if (marked.count !== rows.length) throw new SessionReplaced();
      if (commit.command !== "COMMIT") throw new Error(`outbox publish transaction ended with ${commit.command}, not COMMIT`);
      this.opts.onPublished?.(rows.length);
      return { ...num, published: rows.length };
    } catch (e) {
      await this.afterFailure(conn, open, rows, e);
      throw e;
    }
  }

  /**
   * Ends a failed cycle's transaction and counts the attempt of the rows it had locked, in one round trip. If
   * the session is gone, or that fails too, the relay gives up the lock and starts over with a new session.
   */
  private async afterFailure(conn: Sql, open: boolean, rows: OutboxRow[], err: unknown): Promise<void> {
    if (sessionLost(err)) return this.lostSession(err);
    const seqs = rows.map((r) => r.seq);
    const statements: Promise<unknown>[] = [];
    if (open) statements.push(conn`rollback`.execute());
    if (seqs.length > 0) {
      statements.push(
        conn`update ${this.table("outbox")} set attempts = attempts + 1 where seq = any(${seqs}::int8[]) and pg_backend_pid() = ${this.pid}`
          .execute()
          .catch((e: unknown) => {
            this.opts.log.warn({ err: e }, "could not record outbox publish attempt");
            throw e;
          }),
      );
    }
    try {
      await settled(statements);
      this.lockCheckedAt = 0;
    } catch (e) {
      if (sessionLost(e)) return this.lostSession(e);
      this.leader = false;
      await this.discard(conn, open);
    }
  }

  /**
   * The relay's session has ended (its connection closed, or a statement failed or ran on a new session), and
   * the lock with it: nothing is published until the relay takes the lock again, on the session the client
   * opens next. Statements the old session did not answer may still run on that one first. A leader waiting
   * for its next poll tries at once.
   */
  private lostSession(err?: unknown): void {
    this.replaced = true;
    if (!this.leader) return;
    this.opts.log.warn({ err, schema: this.opts.schema }, "outbox relay lost its database session; it will take the lock again");
    this.leader = false;
    this.interrupt?.();
  }

  /**
   * Numbers the oldest unnumbered rows per (org, livemode) in one autocommit statement, unless numbered rows
   * are still unpublished (those go first, so an org's rows are published in sequence order).
   */
  private numberRows(conn: Sql): postgres.PendingQuery<NumberResult[]> {
    const outbox = this.table("outbox");
    const eventSeq = this.table("event_seq");
    return conn<NumberResult[]>`
      with pending as (
        select exists (select 1 from ${outbox} where published_at is null and payload ? 'sequence') as blocked
      ), batch as (
        select seq, org_id, livemode from ${outbox}
        where published_at is null and not (payload ? 'sequence')
          and not (select blocked from pending) and pg_backend_pid() = ${this.pid}
        order by seq limit ${this.batchSizeMax} for update skip locked
      ), counts as (
        select org_id, livemode, count(*) as n from batch group by org_id, livemode
      ), bumped as (
        insert into ${eventSeq} as e (org_id, livemode, last)
        select org_id, livemode, n from counts
        on conflict (org_id, livemode) do update set last = e.last + excluded.last
        returning org_id, livemode, last
      ), numbered as (
        select b.seq, u.last - c.n + row_number() over (partition by b.org_id, b.livemode order by b.seq) as sequence
        from batch b join counts c using (org_id, livemode) join bumped u using (org_id, livemode)
      ), updated as (
        update ${outbox} o set payload = jsonb_set(o.payload, '{sequence}', to_jsonb(numbered.sequence))
        from numbered where o.seq = numbered.seq
        returning o.seq
      )
      select (select count(*) from updated)::int as numbered, (select blocked from pending) as blocked`;
  }

  /** The numbered, unpublished rows in order, locked for the publish transaction. */
  private selectRows(conn: Sql): postgres.PendingQuery<OutboxRow[]> {
    return conn<OutboxRow[]>`
      select seq, id, org_id, livemode, type, payload, headers, created_at from ${this.table("outbox")}
      where published_at is null and payload ? 'sequence' and pg_backend_pid() = ${this.pid}
      order by seq limit ${this.batchSizeMax} for update skip locked`;
  }

  private message(row: OutboxRow): OutboxMessage {
    const envelope: EventEnvelope = {
      id: row.id,
      type: row.type,
      org_id: row.org_id,
      livemode: row.livemode,
      created_at: row.created_at.toISOString(),
      sequence: Number(row.payload.sequence),
      source: this.opts.source,
      data: row.payload.data,
    };
    return { subject: eventSubject(this.opts.prefix, row.type as EventType), envelope, headers: row.headers };
  }

  /** The relay's client, created on first use; when its connection closes, the relay stops leading at once. */
  private session(): Sql {
    if (this.db === undefined) {
      const db: Sql = sessionClient(this.opts.sql, {
        application_name: `${this.opts.schema} outbox relay`,
        onclose: () => {
          if (this.db === db) this.lostSession();
        },
      });
      this.db = db;
    }
    return this.db;
  }

  /** Takes the lock when not leading; while leading, re-checks it every `lockCheckIntervalMs` (and after a failure). */
  private async tryLead(): Promise<void> {
    if (this.leader && this.clock.now() - this.lockCheckedAt < this.lockCheckIntervalMs) return;
    const db = this.session();
    try {
      this.leader = this.leader ? await this.stillHoldsLock(db) : await this.takeLock(db);
      if (this.leader) this.lockCheckedAt = this.clock.now();
    } catch (e) {
      // A failed session has (or soon will have) lost its lock; take it again next time, on a new session if need be.
      if (sessionLost(e)) this.lostSession(e);
      else {
        this.leader = false;
        await this.discard(db, false);
      }
      throw e;
    }
  }

  /**
   * After a session ended, a ROLLBACK goes first, in the same round trip: statements the old session had not
   * answered may have run on the new one, a BEGIN among them, and the relay's must not run in that transaction.
   */
  private async takeLock(db: Sql): Promise<boolean> {
    const take = (): postgres.PendingQuery<{ ok: boolean; pid: number }[]> => db`
      select pg_try_advisory_lock(hashtext(${this.lockKey})) as ok, pg_backend_pid() as pid`;
    const [row] = this.replaced ? (await settled([db`rollback`.execute(), take().execute()] as const))[1] : await take();
    this.replaced = false;
    if (row?.ok !== true) return false;
    this.pid = row.pid;
    this.opts.log.info({ schema: this.opts.schema }, "outbox relay holds the lock");
    return true;
  }

  /** A reconnected session no longer holds the lock; checking it regularly stops two relays running at once. */
  private async stillHoldsLock(db: Sql): Promise<boolean> {
    const [row] = await db<{ held: boolean }[]>`
      select pg_backend_pid() = ${this.pid} and exists (
        select 1 from pg_locks, (select hashtext(${this.lockKey})::bigint as k) key
        where locktype = 'advisory' and pid = pg_backend_pid() and granted and objsubid = 1
          and classid::bigint = (key.k >> 32) & 4294967295 and objid::bigint = key.k & 4294967295
      ) as held`;
    if (!row?.held) this.opts.log.warn({ schema: this.opts.schema }, "outbox relay lost its lock");
    return row?.held === true;
  }

  /** Gives up the lock explicitly (ending the session would too, a little later), then ends the client. */
  private async releaseLock(): Promise<void> {
    const db = this.db;
    if (db === undefined) return;
    if (this.leader) {
      this.leader = false;
      await this.discard(db, false);
    }
    await this.endSession();
  }

  /**
   * Leaves the relay's session without any advisory lock and, when a transaction may still be open, without that
   * either. If that fails the relay ends the session (the lock goes with it); the next use opens a new client.
   */
  private async discard(db: Sql, inTx: boolean): Promise<void> {
    try {
      await settled([...(inTx ? [db`rollback`.execute()] : []), db`select pg_advisory_unlock_all()`.execute()]);
    } catch (err) {
      this.opts.log.warn({ err }, "could not release outbox relay lock; ending its session");
      if (this.db === db) await this.endSession();
    }
  }

  private async endSession(): Promise<void> {
    const db = this.db;
    this.db = undefined;
    this.leader = false;
    this.replaced = false;
    // Bounded: a statement stuck on a connection that died under it never lets a plain end() finish.
    await db?.end({ timeout: 1 });
  }
}
