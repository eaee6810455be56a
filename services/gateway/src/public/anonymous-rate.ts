/** The rate-limit headers, and the per-IP bucket that requests without a (valid) key spend from. */
import type { FastifyReply, FastifyRequest } from "fastify";
import { RATE_LIMITS } from "@treasury/contracts";
import { after } from "../after.ts";
import type { BucketRule, RateLimiter, TakeResult } from "../ratelimit.ts";

/** Anonymous requests (health, docs, unknown paths, failed auth) share a per-IP read bucket. */
export const ANON_RULE: BucketRule = RATE_LIMITS.read;

export function setRateHeaders(reply: FastifyReply, r: TakeResult): void {
  reply.header("X-RateLimit-Remaining", String(r.remaining));
  reply.header("X-RateLimit-Reset", String(r.resetAt));
}

/** Takes a token of the caller's IP bucket, records it on the request and sets the headers from it. */
export function anonymousRate(limiter: RateLimiter, req: FastifyRequest, reply: FastifyReply): TakeResult | Promise<TakeResult> {
  return after(limiter.take(`anon:${req.ip}`, ANON_RULE), (r) => {
    req.rate = r;
    setRateHeaders(reply, r);
    return r;
  });
}
