// The in-memory token bucket: exact counts, refill, peeks that leave nothing behind, bounded size.
import { describe, expect, it } from "vitest";
import { MemoryRateLimiter } from "./ratelimit.ts";

const rule = { capacity: 3, refillPerSec: 1 };

describe("MemoryRateLimiter", () => {
  it("allows exactly the capacity, then refuses with the time until the next token", () => {
    const l = new MemoryRateLimiter();
    const t0 = 1_000_000;
    expect([1, 2, 3, 4].map(() => l.take("k", rule, 1, t0).allowed)).toEqual([true, true, true, false]);
    const refused = l.take("k", rule, 1, t0);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSec: 1 });
    // One token back after a second, and only one.
    expect(l.take("k", rule, 1, t0 + 1000).allowed).toBe(true);
    expect(l.take("k", rule, 1, t0 + 1000).allowed).toBe(false);
    expect(l.take("k", rule, 1, t0 + 10_000)).toMatchObject({ allowed: true, remaining: 2, resetAt: Math.ceil((t0 + 11_000) / 1000) });
  });

  it("gives a token back however empty the bucket is, never past its capacity", () => {
    const l = new MemoryRateLimiter();
    const rule = { capacity: 2, refillPerSec: 0.001 };
    const now = 1_000_000;
    expect(l.take("k", rule, 1, now).allowed).toBe(true);
    expect(l.take("k", rule, 1, now).allowed).toBe(true);
    expect(l.take("k", rule, 1, now).allowed).toBe(false);
    l.take("k", rule, -1, now);
    expect(l.take("k", rule, 1, now).allowed).toBe(true);
    for (let i = 0; i < 5; i++) l.take("k", rule, -1, now);
    expect([l.take("k", rule, 1, now).allowed, l.take("k", rule, 1, now).allowed, l.take("k", rule, 1, now).allowed]).toEqual([true, true, false]);
  });

  it("peeks with cost 0 without taking a token or creating a bucket", () => {
    const l = new MemoryRateLimiter();
    const t0 = 5_000_000;
    expect(l.take("fresh", rule, 0, t0)).toMatchObject({ allowed: true, remaining: 3 });
    expect((l as unknown as { buckets: Map<string, unknown> }).buckets.size).toBe(0);
    l.take("used", rule, 1, t0);
    l.take("used", rule, 1, t0);
    l.take("used", rule, 1, t0);
    expect(l.take("used", rule, 0, t0)).toMatchObject({ allowed: false });
    expect(l.take("used", rule, 0, t0 + 1000)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("keeps buckets apart per key and evicts the least recently used when full", () => {
    const l = new MemoryRateLimiter();
    const buckets = (l as unknown as { buckets: Map<string, unknown> }).buckets;
    const t0 = 9_000_000;
    for (let i = 0; i < 100_000; i++) l.take(`k${i}`, rule, 1, t0);
    // k0 used again more than a second later moves to the young end; the next new key evicts k1, not k0.
    l.take("k0", rule, 1, t0 + 2000);
    l.take("new", rule, 1, t0 + 2000);
    expect(buckets.size).toBe(100_000);
    expect(buckets.has("k0")).toBe(true);
    expect(buckets.has("k1")).toBe(false);
    expect(l.take("k0", rule, 1, t0 + 2000)).toMatchObject({ remaining: 1 });
  });
});
