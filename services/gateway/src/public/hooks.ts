/**
 * What runs around every request of a public listener: the request's shape, the JSON body parser, the version
 * pin, the rate-limit headers on every answer, and the metric, span end and access-log line once it is sent.
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { SpanStatusCode, type Context, type Span } from "@opentelemetry/api";
import { API_VERSION, DomainError, SUPPORTED_VERSIONS } from "@treasury/contracts";
import { after } from "../after.ts";
import type { KeyRecord } from "../auth.ts";
import { sendError } from "../envelope.ts";
import { parseJsonBody } from "../json-body.ts";
import type { TakeResult } from "../ratelimit.ts";
import { ANON_RULE, anonymousRate, setRateHeaders } from "./anonymous-rate.ts";
import type { GatewayDeps } from "./deps.ts";

declare module "fastify" {
  interface FastifyRequest {
    rate?: TakeResult | undefined;
    key?: KeyRecord | undefined;
    otel?: { ctx: Context; span: Span } | undefined;
    /** The matched route's path, set by the route's own hook (the metric label; no routeOptions object). */
    routePath?: string | undefined;
  }
}

/** The request decorations, the JSON parser and the hooks, in the order they run in. */
export function registerHooks(app: FastifyInstance, deps: GatewayDeps): void {
  declareRequestShape(app);
  registerJsonParser(app);
  // The per-request hooks are callback-style and synchronous when they can be: an async hook costs promises
  // on every request.
  registerVersionPin(app, deps);
  registerRateHeaders(app, deps);
  registerCompletion(app, deps);
}

function declareRequestShape(app: FastifyInstance): void {
  // Declared up front so every request object has the same shape (assigning them later changes it per request).
  app.decorateRequest("rate", undefined);
  app.decorateRequest("key", undefined);
  app.decorateRequest("otel", undefined);
  app.decorateRequest("routePath", undefined);
}

function registerJsonParser(app: FastifyInstance): void {
  // JSON only; a malformed body is a precise 400 rather than Fastify's generic message.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, body, done) => {
    // A signed processor webhook keeps its exact bytes: its signature is checked over them, not over a re-encoding.
    if ((req.routeOptions.config as { rawBody?: boolean } | undefined)?.rawBody === true) return done(null, body);
    const parsed = parseJsonBody(req.headers["content-type"], body as Buffer);
    if (parsed instanceof DomainError) return done(parsed, undefined);
    done(null, parsed);
  });
}

/**
 * Why a pinned version is refused, or undefined when it is served. `Soledgic-Version` (what the official SDK
 * sends) names the same thing as `Service-Version`: either pins, and two different values are refused.
 */
function versionRefusal(service: string | string[] | undefined, soledgic: string | string[] | undefined): string | undefined {
  const pins = [service, soledgic].flatMap((h) => (h === undefined ? [] : [String(h)]));
  if (new Set(pins).size > 1) return `Service-Version "${pins[0] ?? ""}" and Soledgic-Version "${pins[1] ?? ""}" name different versions`;
  const pinned = pins[0];
  if (pinned === undefined || (SUPPORTED_VERSIONS as readonly string[]).includes(pinned)) return undefined;
  return `Unsupported Service-Version "${pinned}"; supported: ${SUPPORTED_VERSIONS.join(", ")}`;
}

function registerVersionPin(app: FastifyInstance, deps: GatewayDeps): void {
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("Service-Version", API_VERSION);
    reply.header("X-Request-Id", String(req.id));
    const refused = versionRefusal(req.headers["service-version"], req.headers["soledgic-version"]);
    if (refused === undefined) return done();
    // Answered here: not calling done() ends the hook chain.
    void after(anonymousRate(deps.limiter, req, reply), () =>
      sendError(req, reply, { code: "unsupported_version", message: refused, hint: `Send Service-Version: ${API_VERSION} or omit the header` }),
    );
  });
}

function registerRateHeaders(app: FastifyInstance, deps: GatewayDeps): void {
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
}

function registerCompletion(app: FastifyInstance, deps: GatewayDeps): void {
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
}
