/**
 * Hosted pages on the alt listener: no API key (the unguessable id in the path authorises), form posts as
 * application/x-www-form-urlencoded, HTML answers or 303 redirects from the owning service.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ERROR_CODES, PAGE_ROUTES, isErrorCode, rpcSubject, type PageRouteDef } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { ANON_RULE, setRateHeaders } from "./anonymous-rate.ts";
import type { GatewayDeps } from "./deps.ts";
import { PATH_PARAM_RE } from "./forward.ts";

export function registerPages(app: FastifyInstance, deps: GatewayDeps): void {
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 16 * 1024 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof body === "string" ? body : body.toString("utf8"))));
  });
  for (const route of PAGE_ROUTES) app.route({ method: route.method, url: route.path, handler: page(deps, route) });
}

function page(deps: GatewayDeps, route: PageRouteDef) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    setPageHeaders(reply);
    const rate = await deps.limiter.take(`anon:${req.ip}`, ANON_RULE);
    req.rate = rate;
    setRateHeaders(reply, rate);
    if (!rate.allowed) return htmlError(reply.header("Retry-After", String(rate.retryAfterSec)), 429, "Too many requests; try again shortly.");
    const params = (req.params ?? {}) as Record<string, string>;
    if (!Object.values(params).every((v) => PATH_PARAM_RE.test(v))) return htmlError(reply, 404, "This page does not exist.");
    const payload = {
      params,
      query: (req.query ?? {}) as Record<string, unknown>,
      form: formOf(req),
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
}

function setPageHeaders(reply: FastifyReply): void {
  reply.header("Cache-Control", "no-store");
  reply.header("X-Frame-Options", "DENY");
  reply.header("Referrer-Policy", "no-referrer");
  reply.header("X-Content-Type-Options", "nosniff");
  reply.header("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'");
}

/** The posted fields that are strings; anything else in the body is dropped. */
function formOf(req: FastifyRequest): Record<string, string> {
  const form: Record<string, string> = {};
  if (req.body && typeof req.body === "object")
    for (const [k, v] of Object.entries(req.body as Record<string, unknown>)) if (typeof v === "string") form[k] = v;
  return form;
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
