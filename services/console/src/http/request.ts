/** What a route reads from its request: query strings, a path's id, and who acts (the signed-in operator). */
import { DomainError } from "@treasury/contracts";
import type { FastifyRequest } from "fastify";
import { actorOf } from "../domain/roles.ts";
import { field } from "./guard.ts";

export const ID_RE = /^[A-Za-z0-9_.:-]{1,255}$/;

export function queryOf(req: FastifyRequest, name: string): string {
  const v = (req.query as Record<string, unknown>)[name];
  return typeof v === "string" ? v.trim() : "";
}

/** A path's id, or a 404 for anything that cannot be one. */
export function idParam(req: FastifyRequest, name = "id"): string {
  const v = (req.params as Record<string, string>)[name] ?? "";
  if (!ID_RE.test(v)) throw new DomainError("route_not_found", "This page does not exist.");
  return v;
}

/** The signed-in operator as the owners record them, and the form's reason. */
export function who(req: FastifyRequest): { actor: string; reason: string | undefined } {
  if (req.session === undefined) throw new Error("route without a guard");
  return { actor: actorOf(req.session.operator.email), reason: field(req, "reason")?.trim() || undefined };
}
