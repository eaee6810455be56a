/**
 * KYC review routes: the queue and a submission are read by any operator; revealing personal data and deciding
 * need the reviewer role. The kyc service records each view and decision with the operator and the reason.
 */
import { DomainError } from "@treasury/contracts";
import { find } from "@treasury/service-kit/operator-client";
import type { FastifyInstance } from "fastify";
import { BASE } from "../pages/layout.ts";
import { KYC_DECISIONS, KYC_STATUSES, kycQueuePage, kycRevealedPage, kycSubmissionPage, type KycDecision } from "../pages/kyc.ts";
import type { HttpDeps } from "./context.ts";
import { field, guard, viewerOf } from "./guard.ts";
import { idParam, queryOf, who } from "./request.ts";

const QUEUE_LIMIT = 100;
const DONE_LABELS: Record<KycDecision, string> = { approve: "approved", reject: "rejected", suspend: "suspended" };

function isDecision(v: string | undefined): v is KycDecision {
  return (KYC_DECISIONS as readonly string[]).includes(v ?? "");
}

export function registerKycRoutes(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/kyc`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const status = queryOf(req, "status") || "pending";
    if (!(KYC_STATUSES as readonly string[]).includes(status)) throw new DomainError("validation_error", `status must be one of ${KYC_STATUSES.join(", ")}`);
    const org = queryOf(req, "org");
    const subject = queryOf(req, "subject");
    if (subject !== "" && subject !== "business" && subject !== "creator") throw new DomainError("validation_error", "subject must be business or creator");
    const flags = { status, limit: String(QUEUE_LIMIT), ...(org === "" ? {} : { org }), ...(subject === "" ? {} : { subject }) };
    const answer = await h.commands.run("kyc list", { ...who(req), flags });
    const verifications = (answer["verifications"] ?? []) as Record<string, unknown>[];
    return reply.type("text/html; charset=utf-8").send(kycQueuePage(viewerOf(req.session!), { status, org, subject }, verifications));
  });
  app.get(`${BASE}/kyc/:id`, { preHandler: guard(h, "read") }, async (req, reply) => {
    const id = idParam(req);
    const done = queryOf(req, "done");
    const label = isDecision(done) ? DONE_LABELS[done] : undefined;
    return reply.type("text/html; charset=utf-8").send(kycSubmissionPage(viewerOf(req.session!), id, await find(h.client, id), label));
  });
  app.post(`${BASE}/kyc/:id/reveal`, { preHandler: guard(h, "review") }, async (req, reply) => {
    const id = idParam(req);
    const w = who(req);
    if (w.reason === undefined) throw new DomainError("validation_error", "Revealing personal data needs a reason.");
    const shown = await h.commands.run("kyc show", { ...w, flags: { id } });
    return reply.type("text/html; charset=utf-8").send(kycRevealedPage(viewerOf(req.session!), id, shown));
  });
  app.post(`${BASE}/kyc/:id/decide`, { preHandler: guard(h, "review") }, async (req, reply) => {
    const id = idParam(req);
    const decision = field(req, "decision");
    if (!isDecision(decision)) throw new DomainError("validation_error", "decision must be approve, reject or suspend");
    await h.commands.run(`kyc ${decision}`, { ...who(req), flags: { id } });
    return reply
      .code(303)
      .header("Location", `${BASE}/kyc/${encodeURIComponent(id)}?done=${decision}`)
      .send();
  });
}
