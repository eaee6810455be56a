/**
 * The public HTTP surface: one Fastify instance per listener (main and alt), both built from the route table.
 * Per request: version pin → API key → scope (fail-closed, before any service sees it) → rate limit → body and
 * query validation → NATS request to the owning service with the caller's auth context → envelope.
 *
 * The parts live under public/: hooks.ts (around every request), errors.ts (thrown errors, 404 and 405),
 * guard.ts (auth, scope, rate limit), forward.ts (validation, the NATS request, the envelope), api-routes.ts
 * (the route table wired to both), meta-routes.ts (health, OpenAPI, docs) and pages.ts (hosted pages, alt only).
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { API_VERSION, BODY_LIMIT_BYTES, newRequestId } from "@treasury/contracts";
import { after } from "./after.ts";
import { clientErrorResponse, sendError } from "./envelope.ts";
import { LazyChildLogger } from "./lazy-logger.ts";
import { ANON_RULE, setRateHeaders } from "./public/anonymous-rate.ts";
import { registerApiRoutes } from "./public/api-routes.ts";
import type { GatewayDeps } from "./public/deps.ts";
import { registerErrorHandlers } from "./public/errors.ts";
import { registerHooks } from "./public/hooks.ts";
import { registerMetaRoutes } from "./public/meta-routes.ts";
import { registerConsole } from "./public/console.ts";
import { registerPages } from "./public/pages.ts";

export type { GatewayDeps } from "./public/deps.ts";

const CLIENT_REQUEST_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;

export async function buildPublicApp(deps: GatewayDeps, opts: { alt: boolean }): Promise<FastifyInstance> {
  const app = createServer(deps, opts);
  registerHooks(app, deps);
  registerErrorHandlers(app);
  registerApiRoutes(app, deps);
  if (opts.alt) registerPages(app, deps);
  if (opts.alt && deps.consoleUrl !== undefined) await registerConsole(app, deps.consoleUrl);
  registerMetaRoutes(app, deps);
  return app;
}

function createServer(deps: GatewayDeps, opts: { alt: boolean }): FastifyInstance {
  return Fastify({
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
}
