/**
 * The console's HTTP listener: server-rendered pages under /console, reached through the gateway's browser
 * listener. Every answer carries a strict Content-Security-Policy (scripts and styles from this origin only, no
 * inline code), is never cached, and may not be framed. Errors are pages: a refused input says what to change
 * (4xx), an unexpected failure names the request id only (500).
 */
import cookie from "@fastify/cookie";
import { DomainError, ERROR_CODES, isErrorCode } from "@treasury/contracts";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { html } from "../domain/html.ts";
import { BASE, notice, page } from "../pages/layout.ts";
import { registerAssets } from "./assets.ts";
import { registerAuthRoutes } from "./auth-routes.ts";
import type { HttpDeps } from "./context.ts";
import { viewerOf } from "./guard.ts";
import { registerPageRoutes } from "./page-routes.ts";

const FORM_BODY_LIMIT_BYTES = 64 * 1024;

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

function securityHeaders(reply: FastifyReply): void {
  reply.header("Content-Security-Policy", CSP);
  reply.header("X-Frame-Options", "DENY");
  reply.header("X-Content-Type-Options", "nosniff");
  reply.header("Referrer-Policy", "same-origin");
  reply.header("Cross-Origin-Opener-Policy", "same-origin");
  reply.header("Cache-Control", "no-store");
}

function errorPage(req: FastifyRequest, reply: FastifyReply, status: number, message: string): FastifyReply {
  const viewer = req.session === undefined ? undefined : viewerOf(req.session);
  const body = html`${notice("error", message)}
    <p><a href="${BASE}">Back to the console</a></p>`;
  return reply
    .code(status)
    .type("text/html; charset=utf-8")
    .send(page({ title: status === 404 ? "Not found" : "Refused", viewer, body }));
}

function registerErrors(app: FastifyInstance, h: HttpDeps): void {
  app.setNotFoundHandler((req, reply) => errorPage(req, reply, 404, "This page does not exist."));
  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof DomainError && isErrorCode(err.code)) {
      const status = ERROR_CODES[err.code].status;
      if (status < 500) return errorPage(req, reply, status, err.message);
      return errorPage(req, reply, status, `${ERROR_CODES[err.code].message} (request ${String(req.id)}).`);
    }
    // Fastify's own refusals (a body too large, a malformed form) are the client's to fix.
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return errorPage(req, reply, err.statusCode, err.message);
    h.log.error({ err, request_id: String(req.id) }, "console request failed");
    return errorPage(req, reply, 500, `Something went wrong (request ${String(req.id)}).`);
  });
}

export async function buildConsoleApp(h: HttpDeps): Promise<FastifyInstance> {
  // Only the gateway reaches the console (network policy); it sets X-Forwarded-For to the operator's address.
  const app = Fastify({ logger: false, trustProxy: true, bodyLimit: FORM_BODY_LIMIT_BYTES, routerOptions: { ignoreTrailingSlash: true } });
  await app.register(cookie);
  app.decorateRequest("session", undefined);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof body === "string" ? body : body.toString("utf8"))));
  });
  app.addHook("onRequest", async (_req, reply) => securityHeaders(reply));
  registerErrors(app, h);
  registerAssets(app);
  registerAuthRoutes(app, h);
  registerPageRoutes(app, h);
  return app;
}
