/**
 * Token-bucket rate limits per key and class. In one process the buckets live in memory (exact); with Redis
 * they live in Redis and are updated by one Lua script, so every gateway replica shares them exactly.
 */
import type { Redis } from "ioredis";

export interface BucketRule {
  capacity: number;
  refillPerSec: number;
}

export interface TakeResult {
  allowed: boolean;
  remaining: number;
  /** Unix seconds when the bucket is full again. */
  resetAt: number;
  /** Seconds until one token is available (0 when allowed). */
  retryAfterSec: number;
}

export interface RateLimiter {
  /**
   * Take `cost` tokens (default 1; 0 peeks: allowed means a token is available). In-memory buckets answer
   * synchronously (no promise per request on the gateway's hot path); shared ones answer with a promise.
   */
  take(key: string, rule: BucketRule, cost?: number, nowMs?: number): TakeResult | Promise<TakeResult>;
  close(): Promise<void>;
}

function outcome(tokens: number, allowed: boolean, rule: BucketRule, nowMs: number): TakeResult {
  const missing = rule.capacity - tokens;
  return {
    allowed,
    remaining: Math.max(0, Math.floor(tokens)),
    resetAt: Math.ceil((nowMs + (missing / rule.refillPerSec) * 1000) / 1000),
    retryAfterSec: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rule.refillPerSec)),
  };
}

const MEMORY_BUCKETS_MAX = 100_000;
/** A bucket used again after this long moves to the young end of the eviction order (LRU to the second). */
const LRU_REFRESH_MS = 1000;

export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; atMs: number; touchedMs: number }>();

  take(key: string, rule: BucketRule, cost = 1, nowMs = Date.now()): TakeResult {
    const b = this.buckets.get(key);
    if (b === undefined) {
      // A full bucket: a peek (cost 0) at one nobody has used leaves nothing behind.
      if (cost === 0) return outcome(rule.capacity, rule.capacity >= 1, rule, nowMs);
      if (this.buckets.size >= MEMORY_BUCKETS_MAX) {
        const oldest = this.buckets.keys().next().value;
        if (oldest !== undefined) this.buckets.delete(oldest);
      }
      const allowed = rule.capacity >= 1;
      const left = allowed ? rule.capacity - cost : rule.capacity;
      this.buckets.set(key, { tokens: left, atMs: nowMs, touchedMs: nowMs });
      return outcome(left, allowed, rule, nowMs);
    }
    const tokens = Math.min(rule.capacity, b.tokens + ((nowMs - b.atMs) / 1000) * rule.refillPerSec);
    const allowed = tokens >= 1;
    // A negative cost gives tokens back (a read that found a valid key): it applies however empty the bucket is.
    b.tokens = cost < 0 ? Math.min(rule.capacity, tokens - cost) : allowed ? tokens - cost : tokens;
    b.atMs = nowMs;
    // Updated in place; re-inserted (Map order is the eviction order) at most once a second per bucket.
    if (nowMs - b.touchedMs >= LRU_REFRESH_MS) {
      b.touchedMs = nowMs;
      this.buckets.delete(key);
      this.buckets.set(key, b);
    }
    return outcome(b.tokens, allowed, rule, nowMs);
  }

  async close(): Promise<void> {}
}

// KEYS[1] bucket; ARGV capacity, refill/s. Uses the Redis server clock so replicas agree on time.
const TAKE_SCRIPT = `
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil then tokens = cap; at = now end
tokens = math.min(cap, tokens + ((now - at) / 1000) * rate)
local allowed = 0
if cost < 0 then tokens = math.min(cap, tokens - cost); allowed = 1
elseif tokens >= 1 then tokens = tokens - cost; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((cap / rate) * 1000) + 1000)
return {allowed, tostring(tokens), tostring(now)}
`;

export class RedisRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix = "rl:",
  ) {
    redis.defineCommand("takeToken", { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  async take(key: string, rule: BucketRule, cost = 1): Promise<TakeResult> {
    const cmd = (this.redis as unknown as { takeToken(k: string, c: number, r: number, cost: number): Promise<[number, string, string]> }).takeToken;
    const [allowed, tokens, now] = await cmd.call(this.redis, this.keyPrefix + key, rule.capacity, rule.refillPerSec, cost);
    return outcome(Number(tokens), allowed === 1, rule, Number(now));
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}
