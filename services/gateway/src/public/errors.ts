/** Thrown errors and unmatched requests on a public listener, answered in the envelope. */
import type { FastifyInstance } from "fastify";
import { BODY_LIMIT_BYTES, DomainError, ROUTES } from "@treasury/contracts";
import { sendError } from "../envelope.ts";

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

export function registerErrorHandlers(app: FastifyInstance): void {
  registerErrorHandler(app);
  registerNotFound(app);
}

function registerErrorHandler(app: FastifyInstance): void {
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
}

function registerNotFound(app: FastifyInstance): void {
  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const methods = allowedMethods(path);
    if (methods.length > 0) {
      reply.header("Allow", methods.join(", "));
      return sendError(req, reply, { code: "method_not_allowed", message: `${req.method} is not allowed on ${path}; allowed: ${methods.join(", ")}` });
    }
    return sendError(req, reply, { code: "route_not_found", message: `No route ${req.method} ${path}`, hint: "See GET /v1/openapi.json for every operation" });
  });
}
