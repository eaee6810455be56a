/**
 * Who is asking, checked on the server for every route but sign-in and the assets: a live session (else sign in
 * again), the session's CSRF token on every POST (the synchronizer token pattern), and the role the route needs.
 */
import { timingSafeEqual } from "node:crypto";
import { DomainError } from "@treasury/contracts";
import type { FastifyReply, FastifyRequest } from "fastify";
import { may, type Permission } from "../domain/roles.ts";
import type { Viewer } from "../pages/layout.ts";
import { BASE } from "../pages/layout.ts";
import { currentSession } from "../usecases/session.ts";
import type { Session } from "../usecases/ports.ts";
import { sessionCookieName, type HttpDeps } from "./context.ts";

declare module "fastify" {
  interface FastifyRequest {
    session?: Session | undefined;
  }
}

export function viewerOf(session: Session): Viewer {
  return { email: session.operator.email, role: session.operator.role, csrfToken: session.csrfToken };
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The posted form's field, when it is a string. */
export function field(req: FastifyRequest, name: string): string | undefined {
  const body = req.body as Record<string, unknown> | undefined;
  const v = body?.[name];
  return typeof v === "string" ? v : undefined;
}

/** A preHandler: the session, its CSRF token on POST, and the permission. */
export function guard(h: HttpDeps, permission: Permission) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const session = await currentSession(h.deps, req.cookies[sessionCookieName(h.secureCookies)]);
    if (session === undefined) {
      if (req.method === "GET") {
        await reply.code(303).header("Location", `${BASE}/sign-in`).send();
        return;
      }
      throw new DomainError("console_session_required", "Your session has ended; sign in again.");
    }
    if (req.method === "POST" && !sameToken(field(req, "_csrf") ?? "", session.csrfToken)) {
      throw new DomainError("csrf_token_invalid", "The form's security token is missing or stale; reload the page and try again.");
    }
    if (!may(session.operator.role, permission)) {
      throw new DomainError("operator_role_forbidden", `Your role (${session.operator.role}) may not do this.`);
    }
    req.session = session;
  };
}
