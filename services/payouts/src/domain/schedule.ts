/**
 * When a payout schedule runs, in UTC days: daily at each midnight, weekly at the midnight starting its anchor
 * weekday, monthly at the midnight starting its anchor date (the month's last day when the month is shorter).
 * Each run pays one period, named by the day it was due: daily `YYYY-MM-DD`, weekly the ISO week `YYYY-Www`,
 * monthly `YYYY-MM`. Pure: the caller gives the tenant's now (the sandbox clock in sandbox).
 */
import type { schemas } from "@treasury/contracts";

export type PayoutInterval = (typeof schemas.PAYOUT_INTERVALS)[number];
export type Weekday = (typeof schemas.WEEKDAYS)[number];
/** A schedule that runs by itself (manual never does). */
export type RunningInterval = Exclude<PayoutInterval, "manual">;

export interface ScheduleTiming {
  interval: PayoutInterval;
  weekly_anchor: Weekday | null;
  monthly_anchor: number | null;
}

const DAY_MS = 86_400_000;
/** getUTCDay() of each weekday (Sunday is 0). */
const WEEKDAY_NUMBER: Record<Weekday, number> = { sunday: 0, monday: 1, tuesday: 2, wednesday: 3, thursday: 4, friday: 5, saturday: 6 };

function startOfDay(t: Date): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()));
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** The monthly run of the month holding `monthIndex` months after January of `year` (it may overflow a year). */
function monthlyRun(year: number, monthIndex: number, anchor: number): Date {
  const first = new Date(Date.UTC(year, monthIndex, 1));
  const y = first.getUTCFullYear();
  const m = first.getUTCMonth();
  return new Date(Date.UTC(y, m, Math.min(anchor, daysInMonth(y, m))));
}

function anchorsOf(s: ScheduleTiming): { weekday: number; date: number } {
  return { weekday: WEEKDAY_NUMBER[s.weekly_anchor ?? "monday"], date: s.monthly_anchor ?? 1 };
}

/** The latest run at or before `t` (the run that `t` belongs to); undefined for manual. */
export function runAtOrBefore(s: ScheduleTiming, t: Date): Date | undefined {
  const day = startOfDay(t);
  const { weekday, date } = anchorsOf(s);
  switch (s.interval) {
    case "manual":
      return undefined;
    case "daily":
      return day;
    case "weekly":
      return new Date(day.getTime() - ((day.getUTCDay() - weekday + 7) % 7) * DAY_MS);
    case "monthly": {
      const thisMonth = monthlyRun(t.getUTCFullYear(), t.getUTCMonth(), date);
      return thisMonth.getTime() <= t.getTime() ? thisMonth : monthlyRun(t.getUTCFullYear(), t.getUTCMonth() - 1, date);
    }
  }
}

/** The first run strictly after `t`: a schedule's next_run_at (null for manual). */
export function nextRunAfter(s: ScheduleTiming, t: Date): Date | null {
  const last = runAtOrBefore(s, t);
  if (last === undefined) return null;
  switch (s.interval) {
    case "daily":
      return new Date(last.getTime() + DAY_MS);
    case "weekly":
      return new Date(last.getTime() + 7 * DAY_MS);
    default:
      return monthlyRun(last.getUTCFullYear(), last.getUTCMonth() + 1, anchorsOf(s).date);
  }
}

/** The ISO 8601 week of a UTC day: `YYYY-Www` (the year is the one holding that week's Thursday). */
export function isoWeek(day: Date): string {
  const d = startOfDay(day);
  const thursday = new Date(d.getTime() + (3 - ((d.getUTCDay() + 6) % 7)) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS)) + 1;
  return `${year}-W${String(week).padStart(2, "0")}`;
}

/** The period a run due at `runAt` pays: what its payout's reference names. */
export function periodKey(interval: RunningInterval, runAt: Date): string {
  const iso = runAt.toISOString();
  if (interval === "daily") return iso.slice(0, 10);
  if (interval === "monthly") return iso.slice(0, 7);
  return isoWeek(runAt);
}

/** The reference of a scheduled payout: one per participant and period, so no period pays twice. */
export function scheduleReference(participantId: string, period: string): string {
  return `schedule:${participantId}:${period}`;
}
