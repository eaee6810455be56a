/**
 * Auth, scope and rate limit for one route of the table, checked in that order before any service sees the
 * request: maintenance → API key (failed attempts limited per IP) → scope (fail-closed) → the key's rate limit.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { propagation, ROOT_CONTEXT, trace, type Span, type Tracer } from "@opentelemetry/api";
import { RATE_LIMITS, hasScope, type RateClass, type Scope } from "@treasury/contracts";
import type { MaintenanceSetting } from "../admin.ts";
import { after } from "../after.ts";
import type { KeyRecord } from "../auth.ts";
import { AuthFailureLimiter, type AuthVerdict } from "../auth-failures.ts";
import { sendError } from "../envelope.ts";
import type { BucketRule, RateLimiter } from "../ratelimit.ts";
import { anonymousRate, setRateHeaders } from "./anonymous-rate.ts";
import type { GatewayDeps } from "./deps.ts";
import type { GuardedRoute } from "./guarded-route.ts";

/**
 * Auth, scope and rate limit for one route; answers the request itself on failure. Synchronous when the
 * key is cached and the buckets are in memory (the common case); a promise otherwise.
 */
export type Guard = (route: GuardedRoute, req: FastifyRequest, reply: FastifyReply) => void | Promise<void>;

export function createGuard(deps: GatewayDeps): Guard {
  const failRule: BucketRule = { capacity: deps.authFailuresPerMin, refillPerSec: deps.authFailuresPerMin / 60 };
  const authFailures = new AuthFailureLimiter(deps.limiter, failRule, deps.authenticator);
  const tracer = trace.getTracer("treasury");
  return (route, req, reply) => {
    const maintenance = deps.authenticator.maintenance();
    if (maintenance.enabled) return refuseForMaintenance(deps.limiter, maintenance, req, reply);
    const span = startSpan(tracer, route, req);
    const scope = route.scope;
    if (scope === null) {
      return after(anonymousRate(deps.limiter, req, reply), (r) => {
        if (!r.allowed) sendError(req, reply, { code: "rate_limited", retryAfterSec: r.retryAfterSec });
      });
    }
    // Failed authentications are limited per client IP (auth-failures.ts); a valid key is never refused by it.
    return after(authFailures.check(req.ip, headerKey(req)), (verdict) => {
      const auth = verdict.result;
      if (!auth.ok) return refuseAuth(verdict, auth.code, req, reply);
      return authorise(deps.limiter, route, scope, auth.key, span, req, reply);
    });
  };
}

function refuseForMaintenance(limiter: RateLimiter, maintenance: MaintenanceSetting, req: FastifyRequest, reply: FastifyReply): void | Promise<void> {
  return after(
    anonymousRate(limiter, req, reply),
    () =>
      void sendError(req, reply, {
        code: "maintenance",
        message: maintenance.message || "Service under maintenance",
        retryAfterSec: maintenance.retry_after_s,
      }),
  );
}

/** The request's server span under the caller's trace context; the request's log lines carry its trace id. */
function startSpan(tracer: Tracer, route: GuardedRoute, req: FastifyRequest): Span {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan(route.spanName, route.spanOptions, parent);
  req.otel = { ctx: trace.setSpan(parent, span), span };
  (req.log as Logger).setBindings({ trace_id: span.spanContext().traceId, operation: route.operation });
  return span;
}

function refuseAuth(verdict: AuthVerdict, code: string, req: FastifyRequest, reply: FastifyReply): void {
  const budget = verdict.budget;
  if (budget !== undefined) {
    req.rate = budget;
    setRateHeaders(reply, budget);
  }
  if (verdict.limited) return void sendError(req, reply, { code: "auth_rate_limited", retryAfterSec: budget?.retryAfterSec });
  return void sendError(req, reply, { code });
}

/** A valid key: its scope, then its own bucket for the route's rate class. */
function authorise(
  limiter: RateLimiter,
  route: GuardedRoute,
  scope: Scope,
  key: KeyRecord,
  span: Span,
  req: FastifyRequest,
  reply: FastifyReply,
): void | Promise<void> {
  req.key = key;
  span.setAttribute("treasury.org_id", key.orgId);
  if (!hasScope(key.scopes, scope)) {
    return after(anonymousRate(limiter, req, reply), () => {
      sendError(req, reply, {
        code: "insufficient_scope",
        message: `This key lacks the "${scope}" scope required by ${route.operation}`,
        hint: `Use a key with the ${scope} scope (or no scope list)`,
      });
    });
  }
  return after(limiter.take(`key:${key.keyId}:${route.rateClass}`, ruleFor(key, route.rateClass)), (r) => {
    req.rate = r;
    setRateHeaders(reply, r);
    if (!r.allowed)
      sendError(req, reply, { code: "rate_limited", message: `Rate limit exceeded for ${route.rateClass} requests`, retryAfterSec: r.retryAfterSec });
  });
}

function ruleFor(key: KeyRecord, cls: RateClass): BucketRule {
  const o = key.rateOverrides[cls];
  return o ? { capacity: o.capacity, refillPerSec: o.refill_per_sec } : RATE_LIMITS[cls];
}

function headerKey(req: FastifyRequest): string | undefined {
  const h = req.headers["x-api-key"];
  return Array.isArray(h) ? h[0] : h;
}
