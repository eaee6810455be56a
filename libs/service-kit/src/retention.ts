/**
 * Retention: rows that only grow (published outbox events, inbox claims, a service's own finished records)
 * are deleted once they are older than their retention period, in small batches, by a periodic sweep. Every
 * replica may sweep: each batch skips rows another session holds, so two sweepers never wait on each other.
 */
import { EVENTS_MAX_AGE_MS } from "@treasury/contracts";
import type { Logger } from "pino";
import type { Sql } from "./db.ts";

const DAY_MS = 24 * 3600 * 1000;
/** Rows per DELETE: short transactions that never hold many locks. */
export const PURGE_BATCH = 1_000;
export const SWEEP_INTERVAL_MS_DEFAULT = 10 * 60 * 1000;
/**
 * Inbox claims must outlive every copy of their event the broker can still deliver: the EVENTS stream keeps an
 * event for EVENTS_MAX_AGE_MS, so a claim is kept at least one day longer.
 */
export const INBOX_RETENTION_DAYS_MIN = Math.ceil(EVENTS_MAX_AGE_MS / DAY_MS) + 1;

export interface PurgeTask {
  /** Names the rows in logs and in the sweep's answer, e.g. "payments.outbox". */
  name: string;
  /** 0 keeps the rows forever. */
  days: number;
  /** Deletes at most `limit` rows older than `before`; answers how many it deleted. */
  purge(before: Date, limit: number): Promise<number>;
}

export class RetentionSweeper {
  private readonly tasks: PurgeTask[] = [];
  private running: Promise<Record<string, number>> | undefined;
  private stopping = false;

  constructor(private readonly log: Logger) {}

  /** Adds a kind of rows to sweep (a service adds its own beside the kit's outbox and inbox). */
  add(task: PurgeTask): void {
    this.tasks.push(task);
  }

  /** Ends a sweep in progress after its current batch and waits for it (the service's job stops the loop). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  /** One sweep of every task (one at a time per process); answers the rows deleted per task. */
  sweep(now = new Date()): Promise<Record<string, number>> {
    this.running ??= this.sweepAll(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepAll(now: Date): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const task of this.tasks) {
      if (task.days === 0) continue;
      const before = new Date(now.getTime() - task.days * DAY_MS);
      let total = 0;
      while (!this.stopping) {
        const n = await task.purge(before, PURGE_BATCH);
        total += n;
        if (n < PURGE_BATCH) break;
      }
      deleted[task.name] = total;
      if (total > 0) this.log.info({ rows: task.name, deleted: total, retention_days: task.days }, "deleted rows past their retention");
    }
    return deleted;
  }
}

/** The kit's own tables of a service schema: published outbox rows and inbox claims. */
export function kitPurgeTasks(sql: Sql, schema: string, days: { outbox: number; inbox: number }): PurgeTask[] {
  const outbox = sql(`${schema}.outbox`);
  const inbox = sql(`${schema}.inbox`);
  return [
    {
      name: `${schema}.outbox`,
      days: days.outbox,
      // Only published rows: an unpublished one is still the relay's work, however old.
      purge: async (before, limit) =>
        (
          await sql`
          delete from ${outbox} where seq in (
            select seq from ${outbox} where published_at < ${before} order by published_at limit ${limit} for update skip locked)`
        ).count,
    },
    {
      name: `${schema}.inbox`,
      days: days.inbox,
      purge: async (before, limit) =>
        (
          await sql`
          delete from ${inbox} where (consumer, event_id) in (
            select consumer, event_id from ${inbox} where processed_at < ${before} order by processed_at limit ${limit} for update skip locked)`
        ).count,
    },
  ];
}
