export interface WaitForOptions {
  /** Give up after this long (default 10 000 ms). */
  timeoutMs?: number;
  /** Pause between attempts (default 50 ms). */
  intervalMs?: number;
}

/**
 * Calls `fn` until it neither throws nor returns `false`, and resolves with what it returned. After
 * `timeoutMs` it rejects with the last error (or says the condition stayed false). Use it for effects
 * that happen asynchronously (an outbox relay publishing, a consumer committing), never as a sleep.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<Exclude<T, false>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await fn();
      if (value !== false) return value as Exclude<T, false>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() + intervalMs > deadline) {
      const why =
        lastError === undefined ? "the condition was still false" : `last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`waitFor: gave up after ${timeoutMs} ms and ${attempt} attempts; ${why}`, { cause: lastError });
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
