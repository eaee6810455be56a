/** The routes about the API itself, taking no key: health of every service, the OpenAPI document and its page. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { API_VERSION, BACKEND_SERVICES, buildOpenApiDocument, healthSubject } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { renderDocsPage } from "../docs.ts";
import { sendError } from "../envelope.ts";
import { anonymousRate } from "./anonymous-rate.ts";
import type { GatewayDeps } from "./deps.ts";

export function registerMetaRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const health = healthCheck(deps);
  app.get("/v1/health-check", health);
  app.post("/v1/health-check", health);

  const openapi = buildOpenApiDocument("/");
  app.get("/v1/openapi.json", async (req, reply) => {
    await anonymousRate(deps.limiter, req, reply);
    return reply.send(openapi);
  });
  const docsHtml = renderDocsPage(openapi);
  app.get("/v1/docs", async (req, reply) => {
    await anonymousRate(deps.limiter, req, reply);
    return reply.type("text/html; charset=utf-8").send(docsHtml);
  });
}

function healthCheck(deps: GatewayDeps) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const r = await anonymousRate(deps.limiter, req, reply);
    if (!r.allowed) return sendError(req, reply, { code: "rate_limited", retryAfterSec: r.retryAfterSec });
    const services: Record<string, "ok" | "down"> = {};
    const gatewayOk = await deps.dbPing().then(
      () => true,
      () => false,
    );
    services.gateway = gatewayOk ? "ok" : "down";
    await Promise.all(
      BACKEND_SERVICES.map(async (name) => {
        const res = await rpcCall(deps.nc, healthSubject(deps.prefix, name), {}, { timeoutMs: deps.healthTimeoutMs, requestId: String(req.id) });
        services[name] = res.ok ? "ok" : "down";
      }),
    );
    const status = Object.values(services).every((s) => s === "ok") ? "ok" : "degraded";
    return reply.send({ success: true, request_id: String(req.id), data: { status, services, version: API_VERSION } });
  };
}
