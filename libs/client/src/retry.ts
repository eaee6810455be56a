/**
 * When to try again: which answers are worth another attempt, and how long to wait before it. Jittered
 * exponential backoff keeps many clients that failed together from coming back together; `Retry-After` is a
 * floor the server sets, never shortened by the backoff.
 */

export interface RetryPolicy {
  /** Requests per logical call, the first included. */
  maxAttempts: number;
  /** The first backoff; each next one doubles, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A `Retry-After` longer than this is not waited for: the error is raised with its `retryAfter` instead. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 };

/**
 * Operations that reach the service and may have run. `429` and `503 maintenance` are answered before any
 * service is asked, so they are retried for every operation; `503 service_unavailable`, `504` and a lost
 * connection leave the outcome unknown, so they are retried only where repeating cannot act twice.
 */
export type Outcome = "not_run" | "unknown";

export function outcomeOf(status: number, errorCode: string | undefined): Outcome | null {
  if (status === 429) return "not_run";
  if (status === 503 && errorCode === "maintenance") return "not_run";
  if (status === 503 || status === 504) return "unknown";
  return null;
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); the body's `retry_after` otherwise. */
export function retryAfterMs(header: string | null, bodySeconds: unknown, nowMs: number): number | undefined {
  if (header !== null && header.trim() !== "") {
    const v = header.trim();
    if (/^\d+$/.test(v)) return Number(v) * 1000;
    const at = Date.parse(v);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  if (typeof bodySeconds === "number" && Number.isFinite(bodySeconds) && bodySeconds >= 0) return bodySeconds * 1000;
  return undefined;
}

/**
 * The wait before attempt `attempt + 1`: "equal jitter" (half the exponential step fixed, half random), so a wait
 * is never near zero yet clients spread out; at least `Retry-After` when the server named one.
 */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number, retryAfter?: number): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = step / 2 + random() * (step / 2);
  return Math.max(jittered, retryAfter ?? 0);
}

/** Waits `ms`, or rejects when `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
