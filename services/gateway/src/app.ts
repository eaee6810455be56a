/**
 * The public HTTP surface: one Fastify instance per listener (main and alt), both built from the route table.
 * Per request: version pin → API key → scope (fail-closed, before any service sees it) → rate limit → body and
 * query validation → NATS request to the owning service with the caller's auth context → envelope.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Histogram } from "prom-client";
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type SpanOptions } from "@opentelemetry/api";
import {
  API_VERSION,
  BACKEND_SERVICES,
  BODY_LIMIT_BYTES,
  DomainError,
  ERROR_CODES,
  PAGE_ROUTES,
  isErrorCode,
  RATE_LIMITS,
  ROUTES,
  SUPPORTED_VERSIONS,
  buildOpenApiDocument,
  unstorableStringError,
  hasScope,
  healthSubject,
  newRequestId,
  rpcSubject,
  validationProblem,
  type AuthContext,
  type PageRouteDef,
  type RateClass,
  type RouteDef,
} from "@treasury/contracts";
import { rpcCall, rpcForward } from "@treasury/service-kit";
import type { Authenticator, KeyRecord } from "./auth.ts";
import { clientErrorResponse, fromRpcError, sendError } from "./envelope.ts";
import { parseJsonBody } from "./json-body.ts";
import { AuthFailureLimiter } from "./auth-failures.ts";
import type { BucketRule, RateLimiter, TakeResult } from "./ratelimit.ts";
import { renderDocsPage } from "./docs.ts";
import { LazyChildLogger } from "./lazy-logger.ts";
import type { TrustProxy } from "./trust-proxy.ts";

export interface GatewayDeps {
  nc: NatsConnection;
  prefix: string;
  log: Logger;
  authenticator: Authenticator;
  limiter: RateLimiter;
  rpcTimeoutMs: number;
  healthTimeoutMs: number;
  authFailuresPerMin: number;
  /** Proxies allowed to name the client (trust-proxy.ts); the client IP keys anonymous and failed-auth limits. */
  trustProxy: TrustProxy;
  dbPing: () => Promise<void>;
  isClosing?: () => boolean;
  /** Public base URL of the alt listener (browser links); resolved after it listens when not configured. */
  altBaseUrl: () => string;
  httpDuration?: Histogram<string> | undefined;
}

declare module "fastify" {
  interface FastifyRequest {
    rate?: TakeResult | undefined;
    key?: KeyRecord | undefined;
    otel?: { ctx: Context; span: Span } | undefined;
    /** The matched route's path, set by the route's own hook (the metric label; no routeOptions object). */
    routePath?: string | undefined;
  }
}

/** Ids in paths: anything else cannot name a resource, and must not reach a service's SQL as text. */
const PATH_PARAM_RE = /^[A-Za-z0-9_.:@-]{1,200}$/;
const CLIENT_REQUEST_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
/** Anonymous requests (health, docs, unknown paths, failed auth) share a per-IP read bucket. */
const ANON_RULE: BucketRule = RATE_LIMITS.read;

/** `f(v)` now when `v` is a value, after it resolves when it is a promise: no promise on the hot path. */
function after<T, R>(v: T | Promise<T>, f: (t: T) => R): R | Promise<Awaited<R>> {
  return v instanceof Promise ? (v.then(f) as Promise<Awaited<R>>) : f(v);
}

function ruleFor(key: KeyRecord, cls: RateClass): BucketRule {
  const o = key.rateOverrides[cls];
  return o ? { capacity: o.capacity, refillPerSec: o.refill_per_sec } : RATE_LIMITS[cls];
}

function setRateHeaders(reply: FastifyReply, r: TakeResult): void {
  reply.header("X-RateLimit-Remaining", String(r.remaining));
  reply.header("X-RateLimit-Reset", String(r.resetAt));
}

/** A route of the table with what the gateway derives from it once. */
type GuardedRoute = RouteDef & { subject: string; spanName: string; spanOptions: SpanOptions; hasParams: boolean };

/** Regexes of every route path, to tell 405 (path exists, other method) from 404. */
const ROUTE_PATTERNS = ROUTES.map((r) => ({ method: r.method, re: new RegExp(`^${r.path.replace(/:[A-Za-z_]+/g, "[^/]+")}/?$`) }));
const EXTRA_PATHS = [
  { re: /^\/v1\/health-check\/?$/, methods: ["GET", "POST"] },
  { re: /^\/v1\/openapi\.json$/, methods: ["GET"] },
  { re: /^\/v1\/docs$/, methods: ["GET"] },
];

function allowedMethods(path: string): string[] {
  const methods = new Set<string>();
  for (const p of ROUTE_PATTERNS) if (p.re.test(path)) methods.add(p.method);
  for (const p of EXTRA_PATHS) if (p.re.test(path)) p.methods.forEach((m) => methods.add(m));
  return [...methods];
}

export async function buildPublicApp(deps: GatewayDeps, opts: { alt: boolean }): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ listener: opts.alt ? "alt" : "main" }) as FastifyBaseLogger,
    // Our own onResponse hook logs each request once (with trace id and operation).
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new LazyChildLogger(logger as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger,
    genReqId: (req) => {
      const h = req.headers["x-request-id"];
      return typeof h === "string" && CLIENT_REQUEST_ID_RE.test(h) ? h : newRequestId();
    },
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: deps.trustProxy,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // A connection whose request Node's parser refused (headers over the limit, not HTTP) gets the envelope too,
    // not Fastify's own error shape. A reset or destroyed socket has nobody to answer.
    clientErrorHandler: (err: Error & { code?: string }, socket) => {
      if (err.code === "ECONNRESET" || socket.destroyed) return;
      if (socket.writable) socket.write(clientErrorResponse(err));
      socket.destroy(err);
    },
    // Errors raised before routing (an undecodable URL) skip the onRequest hook: set its headers here.
    frameworkErrors: (err, req, reply) => {
      reply.header("Service-Version", API_VERSION);
      reply.header("X-Request-Id", String(req.id));
      void after(deps.limiter.take(`anon:${req.ip}`, ANON_RULE), (r) => {
        setRateHeaders(reply, r);
        void sendError(req, reply, { code: "route_not_found", message: `Malformed request path: ${err.message}` });
      });
    },
  });

  // Declared up front so every request object has the same shape (assigning them later changes it per request).
  app.decorateRequest("rate", undefined);
  app.decorateRequest("key", undefined);
  app.decorateRequest("otel", undefined);
  app.decorateRequest("routePath", undefined);

  // JSON only; a malformed body is a precise 400 rather than Fastify's generic message.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, body, done) => {
    // A signed processor webhook keeps its exact bytes: its signature is checked over them, not over a re-encoding.
    if ((req.routeOptions.config as { rawBody?: boolean } | undefined)?.rawBody === true) return done(null, body);
    const parsed = parseJsonBody(req.headers["content-type"], body as Buffer);
    if (parsed instanceof DomainError) return done(parsed, undefined);
    done(null, parsed);
  });

  // The per-request hooks are callback-style and synchronous when they can be: an async hook costs promises
  // on every request.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("Service-Version", API_VERSION);
    reply.header("X-Request-Id", String(req.id));
    const pinned = req.headers["service-version"];
    if (pinned === undefined || (SUPPORTED_VERSIONS as readonly string[]).includes(String(pinned))) return done();
    // Answered here: not calling done() ends the hook chain.
    void after(anonymousRate(req, reply), () =>
      sendError(req, reply, {
        code: "unsupported_version",
        message: `Unsupported Service-Version "${String(pinned)}"; supported: ${SUPPORTED_VERSIONS.join(", ")}`,
        hint: `Send Service-Version: ${API_VERSION} or omit the header`,
      }),
    );
  });

  // Every response carries the rate-limit headers: unauthenticated ones from the caller's IP bucket.
  app.addHook("onSend", (req, reply, payload, done) => {
    // While shutting down, answers close their connection so the server can finish closing (a keep-alive
    // socket that was busy when close() began would otherwise hold it open until its idle timeout).
    if (deps.isClosing?.()) reply.header("Connection", "close");
    if (reply.hasHeader("X-RateLimit-Remaining")) return done(null, payload);
    const r = req.rate ?? deps.limiter.take(`anon:${req.ip}`, ANON_RULE);
    void after(r, (taken) => {
      setRateHeaders(reply, taken);
      done(null, payload);
    });
  });

  // One labelled histogram child per (method, route, status): prom-client would hash the labels every time.
  const durations = new Map<string, { observe(v: number): void }>();
  app.addHook("onResponse", (req, reply, done) => {
    // The route pattern, never the URL: a hosted page's id is the capability that opens it, and query strings
    // carry ids and customer data. One request is found by its request_id instead.
    const route = req.routePath ?? req.routeOptions.url ?? "unmatched";
    if (deps.httpDuration) {
      const k = `${req.method} ${route} ${reply.statusCode}`;
      let child = durations.get(k);
      if (child === undefined) {
        child = deps.httpDuration.labels({ method: req.method, route, status: String(reply.statusCode) });
        durations.set(k, child);
      }
      child.observe(reply.elapsedTime / 1000);
    }
    if (req.otel) {
      req.otel.span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) req.otel.span.setStatus({ code: SpanStatusCode.ERROR });
      req.otel.span.end();
    }
    if ((req.log as Logger).isLevelEnabled("info"))
      req.log.info({ method: req.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, "request completed");
    done();
  });

  app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
    if (err instanceof DomainError)
      return sendError(req, reply, { code: err.code, message: err.message, hint: err.hint, details: err.details, extra: err.extra });
    switch (err.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return sendError(req, reply, { code: "payload_too_large", message: `Request body exceeds ${req.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES} bytes` });
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      case "FST_ERR_CTP_INVALID_TYPE":
        return sendError(req, reply, {
          code: "unsupported_media_type",
          message: "Content-Type must be application/json",
          hint: "Send the body as JSON with Content-Type: application/json",
        });
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      case "FST_ERR_CTP_EMPTY_JSON_BODY":
        return sendError(req, reply, { code: "invalid_json", message: "Request body is not valid JSON" });
    }
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(req, reply, { code: "validation_error", message: err.message });
    }
    req.log.error({ err }, "unhandled error");
    return sendError(req, reply, { code: "internal_error" });
  });

  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const methods = allowedMethods(path);
    if (methods.length > 0) {
      reply.header("Allow", methods.join(", "));
      return sendError(req, reply, { code: "method_not_allowed", message: `${req.method} is not allowed on ${path}; allowed: ${methods.join(", ")}` });
    }
    return sendError(req, reply, { code: "route_not_found", message: `No route ${req.method} ${path}`, hint: "See GET /v1/openapi.json for every operation" });
  });

  const failRule: BucketRule = { capacity: deps.authFailuresPerMin, refillPerSec: deps.authFailuresPerMin / 60 };
  const authFailures = new AuthFailureLimiter(deps.limiter, failRule, deps.authenticator);

  function anonymousRate(req: FastifyRequest, reply: FastifyReply): TakeResult | Promise<TakeResult> {
    return after(deps.limiter.take(`anon:${req.ip}`, ANON_RULE), (r) => {
      req.rate = r;
      setRateHeaders(reply, r);
      return r;
    });
  }

  /**
   * Auth, scope and rate limit for one route; answers the request itself on failure. Synchronous when the
   * key is cached and the buckets are in memory (the common case); a promise otherwise.
   */
  function guard(route: GuardedRoute, req: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    const maintenance = deps.authenticator.maintenance();
    if (maintenance.enabled) {
      return after(
        anonymousRate(req, reply),
        () =>
          void sendError(req, reply, {
            code: "maintenance",
            message: maintenance.message || "Service under maintenance",
            retryAfterSec: maintenance.retry_after_s,
          }),
      );
    }
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(route.spanName, route.spanOptions, parent);
    req.otel = { ctx: trace.setSpan(parent, span), span };
    (req.log as Logger).setBindings({ trace_id: span.spanContext().traceId, operation: route.operation });
    if (route.scope === null) {
      return after(anonymousRate(req, reply), (r) => {
        if (!r.allowed) sendError(req, reply, { code: "rate_limited", retryAfterSec: r.retryAfterSec });
      });
    }
    // Failed authentications are limited per client IP (auth-failures.ts); a valid key is never refused by it.
    return after(authFailures.check(req.ip, headerKey(req)), (verdict) => {
      const auth = verdict.result;
      if (!auth.ok) {
        const budget = verdict.budget;
        if (budget !== undefined) {
          req.rate = budget;
          setRateHeaders(reply, budget);
        }
        if (verdict.limited) return void sendError(req, reply, { code: "auth_rate_limited", retryAfterSec: budget?.retryAfterSec });
        return void sendError(req, reply, { code: auth.code });
      }
      const key = auth.key;
      req.key = key;
      span.setAttribute("treasury.org_id", key.orgId);
      if (!hasScope(key.scopes, route.scope!)) {
        return after(anonymousRate(req, reply), () => {
          sendError(req, reply, {
            code: "insufficient_scope",
            message: `This key lacks the "${route.scope}" scope required by ${route.operation}`,
            hint: `Use a key with the ${route.scope} scope (or no scope list)`,
          });
        });
      }
      return after(deps.limiter.take(`key:${key.keyId}:${route.rateClass}`, ruleFor(key, route.rateClass)), (r) => {
        req.rate = r;
        setRateHeaders(reply, r);
        if (!r.allowed)
          sendError(req, reply, { code: "rate_limited", message: `Rate limit exceeded for ${route.rateClass} requests`, retryAfterSec: r.retryAfterSec });
      });
    });
  }

  async function forward(route: GuardedRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const params = (req.params ?? {}) as Record<string, string>;
    const badParams = route.hasParams ? Object.entries(params).filter(([, v]) => !PATH_PARAM_RE.test(v)) : [];
    if (badParams.length > 0) {
      const details = badParams.map(([k]) => ({ path: `params.${k}`, message: "must be 1–200 characters of A-Z a-z 0-9 _ . : @ -" }));
      return sendError(req, reply, { code: "validation_error", message: `Invalid path parameter ${badParams.map(([k]) => k).join(", ")}`, details });
    }
    let query: unknown = req.query ?? {};
    const badQuery = unstorableStringError(query, "Query");
    if (badQuery !== undefined) return sendError(req, reply, { code: badQuery.code, message: badQuery.message, details: badQuery.details });
    if (route.query) {
      const q = route.query.safeParse(query);
      if (!q.success) {
        const { details, code } = validationProblem(q.error);
        return sendError(req, reply, { code, message: `Invalid query: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`, details });
      }
      query = q.data;
    }
    let body: unknown = route.method !== "GET" ? (req.body ?? {}) : undefined;
    if (route.rawBody !== undefined) body = rawBodyOf(req, route.rawBody.signatureHeader);
    if (route.body) {
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return sendError(req, reply, {
          code: "validation_error",
          message: "Request body must be a JSON object",
          details: [{ path: "", message: "must be a JSON object" }],
        });
      }
      const b = route.body.safeParse(body);
      if (!b.success) {
        const { details, code } = validationProblem(b.error);
        return sendError(req, reply, { code, message: `Invalid body: ${details.map((d) => `${d.path || "(body)"}: ${d.message}`).join("; ")}`, details });
      }
      body = b.data;
    }
    const key = req.key;
    const auth: AuthContext = key
      ? { org_id: key.orgId, livemode: key.livemode, key_id: key.keyId, scopes: key.scopes, request_id: String(req.id) }
      : { org_id: "", livemode: false, key_id: "", scopes: [], request_id: String(req.id) };
    const payload = { auth, params, query, body: body ?? null, deadline: Date.now() + deps.rpcTimeoutMs, alt_base_url: deps.altBaseUrl() };
    const result = await rpcForward(deps.nc, route.subject, payload, {
      timeoutMs: deps.rpcTimeoutMs,
      requestId: String(req.id),
      ...(req.otel ? { parent: req.otel.ctx } : {}),
    });
    if (!result.ok) {
      if (result.error.code === "internal_error") req.log.error({ service: route.service, error: result.error }, "service answered internal_error");
      return sendError(req, reply, fromRpcError(result.error));
    }
    // The envelope around the service's body, as text: the body is neither parsed nor serialised here.
    const head = `{"success":true,"request_id":${JSON.stringify(String(req.id))}`;
    const json = result.bodyJson === "{}" ? `${head}}` : `${head},${result.bodyJson.slice(1)}`;
    return reply.code(result.status).type("application/json; charset=utf-8").send(json);
  }

  const tracer = trace.getTracer("treasury");
  for (const def of ROUTES) {
    const route: GuardedRoute = {
      ...def,
      subject: rpcSubject(deps.prefix, def.service, def.operation),
      spanName: `HTTP ${def.method} ${def.path}`,
      spanOptions: { kind: SpanKind.SERVER, attributes: { "http.request.method": def.method, "http.route": def.path, "treasury.operation": def.operation } },
      hasParams: def.path.includes(":"),
    };
    app.route({
      method: route.method,
      url: route.path,
      bodyLimit: route.bodyLimitBytes ?? BODY_LIMIT_BYTES,
      config: { rawBody: route.rawBody !== undefined },
      onRequest: (req, reply, done) => {
        req.routePath = route.path;
        if (reply.sent) return;
        const pending = guard(route, req, reply);
        // A guard that answered the request ends the chain by not calling done().
        if (pending === undefined) {
          if (!reply.sent) done();
        } else {
          pending.then(() => (reply.sent ? undefined : done()), done);
        }
      },
      handler: (req, reply) => forward(route, req, reply),
    });
  }

  if (opts.alt) registerPages(app, deps);

  const health = async (req: FastifyRequest, reply: FastifyReply) => {
    const r = await anonymousRate(req, reply);
    if (!r.allowed) return sendError(req, reply, { code: "rate_limited", retryAfterSec: r.retryAfterSec });
    const services: Record<string, "ok" | "down"> = {};
    const gatewayOk = await deps.dbPing().then(
      () => true,
      () => false,
    );
    services.gateway = gatewayOk ? "ok" : "down";
    await Promise.all(
      BACKEND_SERVICES.map(async (name) => {
        const res = await rpcCall(deps.nc, healthSubject(deps.prefix, name), {}, { timeoutMs: deps.healthTimeoutMs, requestId: String(req.id) });
        services[name] = res.ok ? "ok" : "down";
      }),
    );
    const status = Object.values(services).every((s) => s === "ok") ? "ok" : "degraded";
    return reply.send({ success: true, request_id: String(req.id), data: { status, services, version: API_VERSION } });
  };
  app.get("/v1/health-check", health);
  app.post("/v1/health-check", health);

  const openapi = buildOpenApiDocument("/");
  app.get("/v1/openapi.json", async (req, reply) => {
    await anonymousRate(req, reply);
    return reply.send(openapi);
  });
  const docsHtml = renderDocsPage(openapi);
  app.get("/v1/docs", async (req, reply) => {
    await anonymousRate(req, reply);
    return reply.type("text/html; charset=utf-8").send(docsHtml);
  });

  return app;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function htmlError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type("text/html; charset=utf-8")
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${status}</title></head><body><main><h1>Something went wrong</h1><p>${escapeHtml(message)}</p></main></body></html>`,
    );
}

/**
 * Hosted pages on the alt listener: no API key (the unguessable id in the path authorises), form posts as
 * application/x-www-form-urlencoded, HTML answers or 303 redirects from the owning service.
 */
function registerPages(app: FastifyInstance, deps: GatewayDeps): void {
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 16 * 1024 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof body === "string" ? body : body.toString("utf8"))));
  });
  const page = (route: PageRouteDef) => async (req: FastifyRequest, reply: FastifyReply) => {
    reply.header("Cache-Control", "no-store");
    reply.header("X-Frame-Options", "DENY");
    reply.header("Referrer-Policy", "no-referrer");
    reply.header("X-Content-Type-Options", "nosniff");
    reply.header("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'");
    const rate = await deps.limiter.take(`anon:${req.ip}`, ANON_RULE);
    req.rate = rate;
    setRateHeaders(reply, rate);
    if (!rate.allowed) return htmlError(reply.header("Retry-After", String(rate.retryAfterSec)), 429, "Too many requests; try again shortly.");
    const params = (req.params ?? {}) as Record<string, string>;
    if (!Object.values(params).every((v) => PATH_PARAM_RE.test(v))) return htmlError(reply, 404, "This page does not exist.");
    const form: Record<string, string> = {};
    if (req.body && typeof req.body === "object")
      for (const [k, v] of Object.entries(req.body as Record<string, unknown>)) if (typeof v === "string") form[k] = v;
    const payload = {
      params,
      query: (req.query ?? {}) as Record<string, unknown>,
      form,
      request_id: String(req.id),
      client_ip: req.ip,
      alt_base_url: deps.altBaseUrl(),
    };
    const result = await rpcCall(deps.nc, rpcSubject(deps.prefix, route.service, route.operation), payload, {
      timeoutMs: deps.rpcTimeoutMs,
      requestId: String(req.id),
    });
    if (!result.ok) {
      const code = result.error.code;
      const status = isErrorCode(code) ? ERROR_CODES[code].status : 500;
      if (status >= 500 && code !== "not_implemented") req.log.error({ error: result.error }, "page failed");
      return htmlError(reply, status, status >= 500 && code !== "not_implemented" ? `Something went wrong (request ${String(req.id)}).` : result.error.message);
    }
    const body = result.body as { html?: string; redirect?: string };
    if (typeof body.redirect === "string") return reply.code(303).header("Location", body.redirect).send();
    return reply
      .code(result.status)
      .type("text/html; charset=utf-8")
      .send(body.html ?? "");
  };
  for (const route of PAGE_ROUTES) app.route({ method: route.method, url: route.path, handler: page(route) });
}

/** The body of a `rawBody` route as the owning service receives it: its exact bytes and the signature header. */
function rawBodyOf(req: FastifyRequest, signatureHeader: string): { payload_base64: string; signature: string | null } {
  const h = req.headers[signatureHeader];
  return { payload_base64: Buffer.isBuffer(req.body) ? req.body.toString("base64") : "", signature: typeof h === "string" ? h : null };
}

function headerKey(req: FastifyRequest): string | undefined {
  const h = req.headers["x-api-key"];
  return Array.isArray(h) ? h[0] : h;
}
