/**
 * Sign-in and sign-out. The sign-in form carries a token of its own that must match a cookie set with it (there
 * is no session yet to hold a CSRF token), so another site cannot sign a browser in to an account of its choosing.
 * A successful sign-in drops whatever session cookie the browser sent and sets a new id (no fixation).
 */
import { DomainError, ERROR_CODES, isErrorCode } from "@treasury/contracts";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { BASE } from "../pages/layout.ts";
import { signInPage } from "../pages/sign-in.ts";
import { signIn, signOut } from "../usecases/sign-in.ts";
import { cookieOptions, sessionCookieName, signInCookieName, type HttpDeps } from "./context.ts";
import { field, guard } from "./guard.ts";

const FORM_TOKEN_MAX_AGE_SEC = 3_600;

function showForm(h: HttpDeps, reply: FastifyReply, status: number, error?: string, email?: string): FastifyReply {
  const formToken = h.deps.randomToken();
  reply.setCookie(signInCookieName(h.secureCookies), formToken, cookieOptions(h.secureCookies, FORM_TOKEN_MAX_AGE_SEC));
  return reply.code(status).type("text/html; charset=utf-8").send(signInPage({ formToken, error, email }));
}

async function postSignIn(h: HttpDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const expected = req.cookies[signInCookieName(h.secureCookies)];
  const email = field(req, "email") ?? "";
  if (expected === undefined || expected === "" || field(req, "_form") !== expected) {
    return showForm(h, reply, 403, "The sign-in form expired or did not come from this console; try again.", email);
  }
  try {
    const s = await signIn(h.deps, { email, password: field(req, "password") ?? "", clientIp: req.ip });
    const ttlSec = Math.floor((s.expiresAt.getTime() - Date.now()) / 1000);
    reply.clearCookie(signInCookieName(h.secureCookies), cookieOptions(h.secureCookies));
    reply.setCookie(sessionCookieName(h.secureCookies), s.sessionId, cookieOptions(h.secureCookies, ttlSec));
    return reply.code(303).header("Location", BASE).send();
  } catch (err) {
    if (!(err instanceof DomainError) || !isErrorCode(err.code)) throw err;
    return showForm(h, reply, ERROR_CODES[err.code].status, err.message, email);
  }
}

export function registerAuthRoutes(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/sign-in`, async (_req, reply) => showForm(h, reply, 200));
  app.post(`${BASE}/sign-in`, async (req, reply) => postSignIn(h, req, reply));
  app.post(`${BASE}/sign-out`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const id = req.cookies[sessionCookieName(h.secureCookies)];
    if (id !== undefined) await signOut(h.deps, id);
    reply.clearCookie(sessionCookieName(h.secureCookies), cookieOptions(h.secureCookies));
    return reply.code(303).header("Location", `${BASE}/sign-in`).send();
  });
}
