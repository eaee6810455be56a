/**
 * The console's pages: each route names the permission it needs (guard.ts checks it, with the session and the
 * CSRF token, before the handler runs); reads and actions go to the owning services as the signed-in operator.
 */
import { DomainError } from "@treasury/contracts";
import { find, listAudit } from "@treasury/service-kit/operator-client";
import type { FastifyInstance } from "fastify";
import { auditPage } from "../pages/audit.ts";
import { findPage, homePage } from "../pages/find.ts";
import { BASE, notice } from "../pages/layout.ts";
import { keyCreatedNotice, orgPage, orgsIndexPage } from "../pages/orgs.ts";
import type { HttpDeps } from "./context.ts";
import { field, guard, viewerOf } from "./guard.ts";
import { ID_RE, idParam, queryOf, who } from "./request.ts";
import { registerKycRoutes } from "./kyc-routes.ts";
import { registerPayoutsRoutes } from "./payouts-routes.ts";
import { registerReviewRoutes } from "./review-routes.ts";

const AUDIT_ROWS_SHOWN = 200;

function checkedQuery(id: string): string {
  if (id.length > 255) throw new DomainError("validation_error", "An id has at most 255 characters.");
  return id;
}

function registerFind(app: FastifyInstance, h: HttpDeps): void {
  app.get(BASE, { preHandler: guard(h, "read") }, async (req, reply) => reply.type("text/html; charset=utf-8").send(homePage(viewerOf(req.session!))));
  app.get(`${BASE}/find`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const id = checkedQuery(queryOf(req, "id"));
    const viewer = viewerOf(req.session!);
    if (id === "") return reply.type("text/html; charset=utf-8").send(homePage(viewer));
    return reply.type("text/html; charset=utf-8").send(findPage(viewer, await find(h.client, id)));
  });
  app.get(`${BASE}/audit`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const target = checkedQuery(queryOf(req, "target"));
    const action = queryOf(req, "action");
    if (action !== "" && !/^[a-z]+(\.[a-z][a-z-]*)?$/.test(action))
      throw new DomainError("validation_error", "An action is a group (kyc) or group.command (kyc.approve).");
    const filter = { ...(target === "" ? {} : { targets: [target] }), ...(action === "" ? {} : { action }), limit: AUDIT_ROWS_SHOWN };
    const { entries, unanswered } = await listAudit(h.client, filter);
    return reply.type("text/html; charset=utf-8").send(
      auditPage(
        viewerOf(req.session!),
        { target, action },
        entries,
        unanswered.map((u) => u.service),
      ),
    );
  });
}

function registerOrgReads(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/orgs`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const org = checkedQuery(queryOf(req, "org"));
    const viewer = viewerOf(req.session!);
    if (org === "") return reply.type("text/html; charset=utf-8").send(orgsIndexPage(viewer));
    const done = queryOf(req, "done");
    const message = /^[a-z ]{1,40}$/.test(done) ? notice("ok", `Recorded: ${done}.`) : undefined;
    return reply.type("text/html; charset=utf-8").send(orgPage(viewer, org, await find(h.client, org), message));
  });
}

function registerOrgActions(app: FastifyInstance, h: HttpDeps): void {
  app.post(`${BASE}/orgs/:id/status`, { preHandler: guard(h, "manage") }, async (req, reply) => {
    const org = idParam(req);
    const status = field(req, "status");
    if (status !== "suspend" && status !== "activate") throw new DomainError("validation_error", "status must be suspend or activate");
    await h.commands.run(`org ${status}`, { ...who(req), flags: { org } });
    return reply
      .code(303)
      .header("Location", `${BASE}/orgs?org=${encodeURIComponent(org)}&done=${status}`)
      .send();
  });
  app.post(`${BASE}/orgs/:id/keys`, { preHandler: guard(h, "manage") }, async (req, reply) => {
    const org = idParam(req);
    const env = field(req, "env");
    if (env !== "test" && env !== "live") throw new DomainError("validation_error", "The environment must be test or live.");
    const scopes = field(req, "scopes")?.trim() ?? "";
    const created = await h.commands.run("key create", { ...who(req), flags: { org, env, ...(scopes === "" ? {} : { scopes }) } });
    const viewer = viewerOf(req.session!);
    return reply.type("text/html; charset=utf-8").send(orgPage(viewer, org, await find(h.client, org), keyCreatedNotice(created)));
  });
  app.post(`${BASE}/keys/:id/revoke`, { preHandler: guard(h, "manage") }, async (req, reply) => {
    const keyId = idParam(req);
    await h.commands.run("key revoke", { ...who(req), flags: { "key-id": keyId } });
    const org = field(req, "org") ?? "";
    const back = ID_RE.test(org) ? `${BASE}/orgs?org=${encodeURIComponent(org)}&done=key%20revoked` : `${BASE}/find?id=${encodeURIComponent(keyId)}`;
    return reply.code(303).header("Location", back).send();
  });
}

export function registerPageRoutes(app: FastifyInstance, h: HttpDeps): void {
  registerFind(app, h);
  registerKycRoutes(app, h);
  registerReviewRoutes(app, h);
  registerPayoutsRoutes(app, h);
  registerOrgReads(app, h);
  registerOrgActions(app, h);
}
