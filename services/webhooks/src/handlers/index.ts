/** RPC handlers of the webhooks service: decode with the shared contracts → use case → `{data: …}`. */
import { parseOrThrow, schemas, tenantOf } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import type { z } from "zod";
import * as deliveries from "../usecases/deliveries.ts";
import type { Deps } from "../usecases/deps.ts";
import * as endpoints from "../usecases/endpoints.ts";
import { sendTestEvent } from "../usecases/sandbox-test.ts";

/** A bad body is a typed 400 with details, never a 500 (the gateway validates too; direct RPC callers may not). */
export function decode<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  return parseOrThrow(schema, value);
}

export function manageWebhooks(deps: Deps): RpcHandler {
  return async (req, ctx) => {
    const body = decode(schemas.WebhooksBody, req.body);
    const s = tenantOf(ctx.auth);
    switch (body.action) {
      case "list":
        return { body: { data: await endpoints.listEndpoints(deps, s) } };
      case "create":
        return { status: 201, body: { data: await endpoints.createEndpoint(deps, s, body) } };
      case "update":
        return { body: { data: await endpoints.updateEndpoint(deps, s, body) } };
      case "delete":
        return { body: { data: await endpoints.deleteEndpoint(deps, s, body.endpoint_id) } };
      case "test":
        return { body: { data: await endpoints.testEndpoint(deps, s, body.endpoint_id, ctx.deadline) } };
      case "deliveries":
        return { body: { data: await deliveries.listDeliveries(deps, s, body) } };
      case "retry":
        return { body: { data: await deliveries.retryDelivery(deps, s, body.delivery_id) } };
      case "replay":
        return { body: { data: await deliveries.replay(deps, s, body) } };
      case "rotate_secret":
        return { body: { data: await endpoints.rotateSecret(deps, s, body.endpoint_id) } };
    }
  };
}

export function sandboxSendTestWebhook(deps: Deps): RpcHandler {
  return async (req, ctx) => {
    const body = decode(schemas.SandboxWebhookTestBody, req.body);
    return { body: { ...(await sendTestEvent(deps, tenantOf(ctx.auth), body)) } };
  };
}

/**
 * The platform's public signing keys (RFC 7517 key set). The route takes no API key: the keys are the platform's,
 * not an org's, and public by design; the gateway adds its cache header.
 */
export function getWebhookJwks(deps: Pick<Deps, "signingKeys">): RpcHandler {
  return async () => ({ body: { ...(await deps.signingKeys.jwks()) } });
}

export function registerHandlers(svc: Pick<Service, "handle">, deps: Deps): void {
  svc.handle("manageWebhooks", manageWebhooks(deps));
  svc.handle("sandboxSendTestWebhook", sandboxSendTestWebhook(deps));
  svc.handle("getWebhookJwks", getWebhookJwks(deps));
}
