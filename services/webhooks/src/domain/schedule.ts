/**
 * The retry schedule (docs/api.md, Webhooks): attempt 1 now, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after
 * each failure, with ± 10 % jitter; after the last attempt the delivery is failed.
 */
export const DEFAULT_RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
export const RETRY_JITTER = 0.1;
const SCHEDULE_LENGTH_MAX = 50;
const DELAY_MAX_MS = 7 * 24 * 3600 * 1000;

/** Parses `0,50,100,…` (milliseconds). Throws on anything else: a bad schedule is a configuration error. */
export function parseSchedule(text: string): number[] {
  const parts = text.split(",").map((s) => s.trim());
  const out = parts.map((p) => Number(p));
  if (parts.length === 0 || parts.length > SCHEDULE_LENGTH_MAX || out.some((n, i) => parts[i] === "" || !Number.isInteger(n) || n < 0 || n > DELAY_MAX_MS)) {
    throw new Error(`retry schedule must be 1–${SCHEDULE_LENGTH_MAX} comma-separated integers of milliseconds (0–${DELAY_MAX_MS})`);
  }
  return out;
}

/**
 * Delay before the next attempt after `attemptsMade` attempts have failed, or null when none is left.
 * `random` is in [0, 1); jitter is ± RETRY_JITTER of the delay.
 */
export function nextDelayMs(schedule: readonly number[], attemptsMade: number, maxAttempts: number, random: number): number | null {
  if (attemptsMade >= maxAttempts) return null;
  const base = schedule[Math.min(attemptsMade, schedule.length - 1)] ?? 0;
  return Math.max(0, Math.round(base * (1 + RETRY_JITTER * (2 * random - 1))));
}
