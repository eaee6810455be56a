/**
 * The time a tenant runs on. Live always runs on real time. An org's sandbox runs on real time plus how far its
 * test clock was advanced (`POST /v1/sandbox/clock/advance`, never backwards): every time-driven rule of a sandbox
 * (hold auto-release, reserve release, payout schedules, refund request expiry) asks this clock, so an integrator
 * sees a month of schedules in seconds.
 *
 * Each service keeps the advances in its own `sandbox_clocks` (a kit table): the owner writes it with its
 * `sandbox_clock.advanced` event, every other service that follows the clock applies the event to its copy. Every
 * replica re-reads its copy each second (one small table: only orgs whose sandbox was advanced) and wakes its jobs
 * when an org's clock moved, so the work that became due runs within seconds of the advance on whichever replica
 * holds the job.
 */
import type { Logger } from "pino";
import type { Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "./db.ts";

/** How often each replica re-reads the advances. */
export const CLOCK_REFRESH_MS = 1_000;

export interface Clock {
  /** Now, for this org and environment. */
  now(tenant: Tenant): Date;
  /** Seconds an org's sandbox is ahead of real time (0 when never advanced). */
  advancedSeconds(orgId: string): number;
  /** Every sandbox ahead of real time: for jobs that select due work of all orgs in one statement. */
  advanced(): ReadonlyMap<string, number>;
  /** `fn` runs after an org's sandbox clock moved (a job's runOnce, so what became due runs now). */
  onAdvance(fn: (orgId: string) => void): void;
  /** An org's advance as its owner answers it now, ahead of the event that brings it here. */
  sync(orgId: string, advancedSeconds: number): void;
}

/** A clock that reads the service's sandbox_clocks and notices advances made by any replica or service. */
export class SandboxClock implements Clock {
  private offsets = new Map<string, number>();
  /** Advances read from the clock's owner ahead of their event (sync): kept until this copy has caught up. */
  private readonly synced = new Map<string, number>();
  private readonly listeners: Array<(orgId: string) => void> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly schema: string,
    private readonly log: Logger,
    private readonly realNow: () => Date = () => new Date(),
  ) {}

  now(tenant: Tenant): Date {
    const real = this.realNow();
    if (tenant.livemode) return real;
    return new Date(real.getTime() + this.advancedSeconds(tenant.orgId) * 1000);
  }

  advancedSeconds(orgId: string): number {
    return Math.max(this.offsets.get(orgId) ?? 0, this.synced.get(orgId) ?? 0);
  }

  advanced(): ReadonlyMap<string, number> {
    if (this.synced.size === 0) return this.offsets;
    const all = new Map(this.offsets);
    for (const [org, s] of this.synced) all.set(org, Math.max(all.get(org) ?? 0, s));
    return all;
  }

  /**
   * Applies an org's advance read from the clock's owner (the ledger) before its event reaches this copy, so a
   * request that follows an advance computes with it (read your writes); never moves the clock back.
   */
  sync(orgId: string, advancedSeconds: number): void {
    if (advancedSeconds > this.advancedSeconds(orgId)) this.synced.set(orgId, advancedSeconds);
  }

  onAdvance(fn: (orgId: string) => void): void {
    this.listeners.push(fn);
  }

  async start(): Promise<void> {
    // What was advanced before this replica started is where it starts from, not a move to react to.
    this.offsets = await this.read();
    const tick = (): void => {
      this.refresh()
        .catch((err: unknown) => this.log.warn({ err }, "sandbox clock refresh failed; keeping the advances last read"))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, CLOCK_REFRESH_MS);
        });
    };
    this.timer = setTimeout(tick, CLOCK_REFRESH_MS);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async read(): Promise<Map<string, number>> {
    const rows = await this.sql<{ org_id: string; advanced_seconds: string }[]>`
      select org_id, advanced_seconds from ${this.sql(`${this.schema}.sandbox_clocks`)}`;
    return new Map(rows.map((r) => [r.org_id, Number(r.advanced_seconds)]));
  }

  /** Reads the advances; tells the listeners about each org whose clock moved since the last read. */
  async refresh(): Promise<void> {
    const next = await this.read();
    const moved = [...next].filter(([org, s]) => (this.offsets.get(org) ?? 0) !== s).map(([org]) => org);
    this.offsets = next;
    for (const [org, s] of this.synced) if ((next.get(org) ?? 0) >= s) this.synced.delete(org);
    for (const org of moved) for (const fn of this.listeners) fn(org);
  }
}

/**
 * Moves an org's sandbox clock forward to `advancedSeconds` ahead of real time, in the caller's transaction; a
 * smaller value (an older event arriving late) changes nothing. Answers the advance now in force.
 */
export async function advanceSandboxClock(q: Sql | Tx, schema: string, orgId: string, advancedSeconds: number): Promise<number> {
  const [row] = await q<{ advanced_seconds: string }[]>`
    insert into ${q(`${schema}.sandbox_clocks`)} (org_id, advanced_seconds) values (${orgId}, ${advancedSeconds})
    on conflict (org_id) do update
      set advanced_seconds = greatest(sandbox_clocks.advanced_seconds, excluded.advanced_seconds), updated_at = now()
    returning advanced_seconds`;
  return Number(row?.advanced_seconds ?? advancedSeconds);
}
