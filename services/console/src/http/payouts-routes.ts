/**
 * The bank rail's operations: they move money between the platform and the bank, so they need the admin role.
 * Each is the payouts service's own command; the page shows its answer.
 */
import { DomainError } from "@treasury/contracts";
import type { FastifyInstance } from "fastify";
import { BASE } from "../pages/layout.ts";
import { payoutsPage } from "../pages/payouts.ts";
import type { HttpDeps } from "./context.ts";
import { field, guard, viewerOf } from "./guard.ts";
import { who } from "./request.ts";

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

const OPERATIONS = {
  "cut-file": { command: "payouts cut-file", title: "File cut" },
  settle: { command: "payouts settle", title: "Settlement" },
  "run-schedules": { command: "payouts run-schedules", title: "Schedules run" },
} as const;

export function registerPayoutsRoutes(app: FastifyInstance, h: HttpDeps): void {
  app.get(`${BASE}/payouts`, { preHandler: guard(h, "manage") }, async (req, reply) =>
    reply.type("text/html; charset=utf-8").send(payoutsPage(viewerOf(req.session!))),
  );
  for (const [path, op] of Object.entries(OPERATIONS)) {
    app.post(`${BASE}/payouts/${path}`, { preHandler: guard(h, "manage") }, async (req, reply) => {
      const w = who(req);
      if (w.reason === undefined) throw new DomainError("validation_error", "Say why: the payouts service records the reason.");
      const date = field(req, "date") ?? "";
      if (path === "settle" && !DATE_RE.test(date)) throw new DomainError("validation_error", "The settlement date must be a date (YYYY-MM-DD).");
      const body = await h.commands.run(op.command, { ...w, flags: path === "settle" ? { date } : {} });
      return reply.type("text/html; charset=utf-8").send(payoutsPage(viewerOf(req.session!), { title: op.title, body }));
    });
  }
}
