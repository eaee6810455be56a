/**
 * Risk reviews and the platform's checks. Reading the queue and running the checks need only the viewer role
 * (the checks change nothing); a decision needs the reviewer role. The owners record each with the operator.
 */
import { DomainError } from "@treasury/contracts";
import type { FastifyInstance } from "fastify";
import { BASE } from "../pages/layout.ts";
import { checksPage, RISK_STATUSES, riskQueuePage } from "../pages/reviews.ts";
import type { HttpDeps } from "./context.ts";
import { field, guard, viewerOf } from "./guard.ts";
import { idParam, queryOf, who } from "./request.ts";

const QUEUE_LIMIT = "100";
const DONE: Record<string, string> = { approve: "approved", deny: "denied" };

function registerRisk(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/risk`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const status = queryOf(req, "status") || "pending";
    if (!(RISK_STATUSES as readonly string[]).includes(status)) throw new DomainError("validation_error", `status must be one of ${RISK_STATUSES.join(", ")}`);
    const answer = await h.commands.run("risk list", { ...who(req), flags: { status, limit: QUEUE_LIMIT } });
    const evaluations = (answer["evaluations"] ?? []) as Record<string, unknown>[];
    return reply.type("text/html; charset=utf-8").send(riskQueuePage(viewerOf(req.session!), status, evaluations, DONE[queryOf(req, "done")]));
  });
  app.post(`${BASE}/risk/:id/decide`, { preHandler: guard(h, "review") }, async (req, reply) => {
    const id = idParam(req);
    const decision = field(req, "decision");
    if (decision !== "approve" && decision !== "deny") throw new DomainError("validation_error", "decision must be approve or deny");
    await h.commands.run(`risk ${decision}`, { ...who(req), flags: { id } });
    return reply.code(303).header("Location", `${BASE}/risk?done=${decision}`).send();
  });
}

function registerChecks(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/checks`, { preHandler: guard(h, "read") }, async (req, reply) =>
    reply.type("text/html; charset=utf-8").send(checksPage(viewerOf(req.session!))),
  );
  app.post(`${BASE}/checks/ledger`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const body = await h.commands.run("ledger verify", { ...who(req), flags: {} });
    const result = { title: "Ledger invariants", ok: body["ok"] === true, body };
    return reply.type("text/html; charset=utf-8").send(checksPage(viewerOf(req.session!), result));
  });
  app.post(`${BASE}/checks/receipts`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const body = await h.commands.run("receipts audit-chains", { ...who(req), flags: {} });
    const broken = body["broken"];
    const result = { title: "Receipt chains", ok: !Array.isArray(broken) || broken.length === 0, body };
    return reply.type("text/html; charset=utf-8").send(checksPage(viewerOf(req.session!), result));
  });
}

export function registerReviewRoutes(app: FastifyInstance, h: HttpDeps): void {
  registerRisk(app, h);
  registerChecks(app, h);
}
