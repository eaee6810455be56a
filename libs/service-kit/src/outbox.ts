import { jetstream } from "@nats-io/jetstream";
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import { SpanKind, trace } from "@opentelemetry/api";
import type { Context } from "@opentelemetry/api";
import { eventSubject, NATS_HEADERS, newId } from "@treasury/contracts";
import type { EventEnvelope, EventType } from "@treasury/contracts";
import type postgres from "postgres";
import type { Logger } from "pino";
import type { Sql, Tx } from "./db.ts";
import { requestContext } from "./context.ts";
import { markOutboxWritten, onOutboxCommitted } from "./outbox-signal.ts";
import { extractTraceRecord, injectTraceHeadersFrom, injectTraceRecord, tracer } from "./telemetry.ts";

export interface NewEvent {
  type: EventType;
  org_id: string;
  livemode: boolean;
  data: Record<string, unknown>;
  /** Defaults to a fresh `evt_` id; pass one to make the write itself idempotent. */
  id?: string;
}

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

/**
 * Records an event in the caller's transaction, so it exists if and only if the change commits. When the
 * transaction was run by `withTx`, the local relay is woken right after COMMIT (outbox-signal.ts); otherwise
 * the relay's short poll finds the row. The current trace context and request id are
 * stored with the row so the published message continues the trace of the request that caused it.
 */
export async function writeOutbox(tx: Tx, schema: string, event: NewEvent, hdrs: Record<string, string> = {}): Promise<string> {
  const id = event.id ?? newId("evt");
  const stored: Record<string, string> = { ...hdrs };
  injectTraceRecord(stored);
  const requestId = requestContext.get()?.requestId;
  if (requestId !== undefined && stored[NATS_HEADERS.requestId] === undefined) stored[NATS_HEADERS.requestId] = requestId;
  const payload = { data: event.data } as postgres.JSONValue;
  // The subject column is informational (prefix-free); the relay derives the real subject from `type`.
  await tx`
    insert into ${tx(`${schema}.outbox`)} (id, org_id, livemode, type, subject, payload, headers)
    values (${id}, ${event.org_id}, ${event.livemode}, ${event.type}, ${eventSubject("", event.type)},
            ${tx.json(payload)}, ${tx.json(stored)})`;
  markOutboxWritten(tx, schema);
  return id;
}

export interface OutboxRelayOptions {
  sql: Sql;
  nc: NatsConnection;
  schema: string;
  prefix: string;
  source: string;
  log: Logger;
  batchSizeMax?: number;
  pollIntervalMs?: number;
  hooks?: { afterPublishBeforeMark?: (ids: string[]) => Promise<void> };
}

const BATCH_SIZE_MAX_DEFAULT = 100;
// Short: the fallback for rows committed outside withTx or by another replica (no NOTIFY: see outbox-signal.ts).
const POLL_INTERVAL_MS_DEFAULT = 100;
const BACKOFF_MAX_MS = 30_000;

/**
 * Publishes a service's outbox to JetStream. One relay per service does the work: it holds a session
 * advisory lock on a reserved connection; other replicas retry the lock periodically and take over when
 * the holder's session ends.
 *
 * Sequences: rows get their per-(org, livemode) sequence in a committed step of their own, before any
 * publish, so a republish after a crash carries the same number. New numbers are handed out only when every
 * numbered row is published, so rows are always published in sequence order within an org.
 *
 * The publish transaction spans network calls on purpose: it locks only unpublished outbox rows (writers
 * only insert), and it lets "publish, then mark" be all-or-nothing from the database's point of view.
 */
export class OutboxRelay {
  private readonly opts: OutboxRelayOptions;
  private readonly batchSizeMax: number;
  private readonly pollIntervalMs: number;
  private readonly lockKey: string;
  private readonly js: JetStreamClient;
  private reserved: postgres.ReservedSql | undefined;
  private unsubscribe: (() => void) | undefined;
  private leader = false;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private woken = false;
  private interrupt: (() => void) | undefined;

  constructor(opts: OutboxRelayOptions) {
    this.opts = opts;
    this.batchSizeMax = opts.batchSizeMax ?? BATCH_SIZE_MAX_DEFAULT;
    this.pollIntervalMs = opts.pollIntervalMs ?? POLL_INTERVAL_MS_DEFAULT;
    this.lockKey = `${opts.schema}.outbox_relay`;
    this.js = jetstream(opts.nc);
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
        clearTimeout(timer);
        this.interrupt = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.interrupt = () => {
        if (this.stopped || wakeable) done();
      };
    });
  }

  private async publishBacklog(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      if ((await this.cycle()) === 0) return;
    }
  }

  /** One batch: publish the numbered rows, or number the next batch and publish that. */
  private async cycle(): Promise<number> {
    const published = await this.publishNumbered();
    if (published > 0) return published;
    if ((await this.assignSequences()) === 0) return 0;
    return this.publishNumbered();
  }

  private table(name: string): postgres.Helper<string> {
    return this.opts.sql(`${this.opts.schema}.${name}`);
  }

  /** Numbers the oldest unnumbered rows per (org, livemode) in one statement and commits. */
  private async assignSequences(): Promise<number> {
    const outbox = this.table("outbox");
    const eventSeq = this.table("event_seq");
    const rows = await this.opts.sql.begin(
      (tx) => tx`
        with batch as (
          select seq, org_id, livemode from ${outbox}
          where published_at is null and not (payload ? 'sequence')
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
        )
        update ${outbox} o set payload = jsonb_set(o.payload, '{sequence}', to_jsonb(numbered.sequence))
        from numbered where o.seq = numbered.seq
        returning o.seq`,
    );
    return rows.length;
  }

  private async publishNumbered(): Promise<number> {
    const outbox = this.table("outbox");
    let ids: string[] = [];
    try {
      return await this.opts.sql.begin(async (tx) => {
        const rows = await tx<OutboxRow[]>`
          select seq, id, org_id, livemode, type, payload, headers, created_at from ${outbox}
          where published_at is null and payload ? 'sequence'
          order by seq limit ${this.batchSizeMax} for update skip locked`;
        if (rows.length === 0) return 0;
        ids = rows.map((r) => r.id);
        // Pipelined: all of the batch's publishes go out on the one connection before the first ack comes
        // back, so the broker stores them in this order. If one fails the batch is not marked and is
        // republished whole (same ids: the broker drops the copies); only then can a later event of the
        // batch reach the stream before the failed one, and consumers order by `sequence`.
        await Promise.all(rows.map((row) => this.publish(row)));
        await this.opts.hooks?.afterPublishBeforeMark?.(ids);
        await tx`update ${outbox} set published_at = now(), attempts = attempts + 1 where id in ${tx(ids)}`;
        return rows.length;
      });
    } catch (e) {
      if (ids.length > 0) await this.countFailedAttempt(ids);
      throw e;
    }
  }

  private async countFailedAttempt(ids: string[]): Promise<void> {
    await this.opts.sql`update ${this.table("outbox")} set attempts = attempts + 1 where id in ${this.opts.sql(ids)}`.catch(
      (err: unknown) => this.opts.log.warn({ err }, "could not record outbox publish attempt"),
    );
  }

  private envelope(row: OutboxRow): EventEnvelope {
    return {
      id: row.id,
      type: row.type,
      org_id: row.org_id,
      livemode: row.livemode,
      created_at: row.created_at.toISOString(),
      sequence: Number(row.payload.sequence),
      source: this.opts.source,
      data: row.payload.data,
    };
  }

  private messageHeaders(row: OutboxRow, traceCtx: Context): MsgHdrs {
    const h = headers();
    for (const [k, v] of Object.entries(row.headers)) {
      if (k !== NATS_HEADERS.traceparent && k !== NATS_HEADERS.tracestate) h.set(k, v);
    }
    // The publish span (child of the stored request context) becomes the consumer's parent.
    injectTraceHeadersFrom(traceCtx, h);
    return h;
  }

  private async publish(row: OutboxRow): Promise<void> {
    const subject = eventSubject(this.opts.prefix, row.type as EventType);
    const parent = extractTraceRecord(row.headers);
    const span = tracer().startSpan(`publish ${row.type}`, { kind: SpanKind.PRODUCER }, parent);
    try {
      const ack = await this.js.publish(subject, JSON.stringify(this.envelope(row)), {
        msgID: row.id,
        headers: this.messageHeaders(row, trace.setSpan(parent, span)),
      });
      if (ack.duplicate) this.opts.log.info({ event_id: row.id }, "event already in stream; broker de-duplicated the republish");
    } finally {
      span.end();
    }
  }

  private async tryLead(): Promise<void> {
    this.reserved ??= await this.opts.sql.reserve();
    const reserved = this.reserved;
    try {
      this.leader = this.leader ? await this.stillHoldsLock(reserved) : await this.takeLock(reserved);
    } catch (e) {
      // A failed session has (or soon will have) lost its lock; start over with a fresh connection next time.
      this.leader = false;
      this.reserved = undefined;
      await this.discard(reserved);
      throw e;
    }
  }

  private async takeLock(reserved: postgres.ReservedSql): Promise<boolean> {
    const [row] = await reserved<{ ok: boolean }[]>`select pg_try_advisory_lock(hashtext(${this.lockKey})) as ok`;
    if (row?.ok) this.opts.log.info({ schema: this.opts.schema }, "outbox relay holds the lock");
    return row?.ok === true;
  }

  /** A reconnected session no longer holds the lock; checking each round stops two relays running at once. */
  private async stillHoldsLock(reserved: postgres.ReservedSql): Promise<boolean> {
    const [row] = await reserved<{ held: boolean }[]>`
      select exists (
        select 1 from pg_locks, (select hashtext(${this.lockKey})::bigint as k) key
        where locktype = 'advisory' and pid = pg_backend_pid() and granted and objsubid = 1
          and classid::bigint = (key.k >> 32) & 4294967295 and objid::bigint = key.k & 4294967295
      ) as held`;
    if (!row?.held) this.opts.log.warn({ schema: this.opts.schema }, "outbox relay lost its lock");
    return row?.held === true;
  }

  private async releaseLock(): Promise<void> {
    const reserved = this.reserved;
    this.reserved = undefined;
    this.leader = false;
    if (reserved) await this.discard(reserved);
  }

  /** Returns a reserved connection to the pool without any advisory lock, which would otherwise outlive us there. */
  private async discard(reserved: postgres.ReservedSql): Promise<void> {
    try {
      await reserved`select pg_advisory_unlock_all()`;
    } catch (err) {
      this.opts.log.warn({ err }, "could not release outbox relay lock; it ends with the session");
    } finally {
      reserved.release();
    }
  }
}
