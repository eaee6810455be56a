/** RPC handlers of the webhooks service: decode with the shared contracts → use case → `{data: …}`. */
import { DomainError, schemas, type AuthContext } from "@treasury/contracts";
import type { RpcHandler } from "@treasury/service-kit";
import type { z } from "zod";
import * as deliveries from "../usecases/deliveries.ts";
import type { Deps, Scope } from "../usecases/deps.ts";
import * as endpoints from "../usecases/endpoints.ts";
import { sendTestEvent } from "../usecases/sandbox-test.ts";

const NESTING_MAX = 64;

/** True when any string (key or value) inside `v` contains U+0000. */
function hasNul(v: unknown, depth = 0): boolean {
  if (typeof v === "string") return v.includes("\u0000");
  if (depth > NESTING_MAX || v === null || typeof v !== "object") return false;
  if (Array.isArray(v)) return v.some((x) => hasNul(x, depth + 1));
  return Object.entries(v).some(([k, x]) => k.includes("\u0000") || hasNul(x, depth + 1));
}

/** A bad body is a typed 400 with details, never a 500 (the gateway validates too; direct RPC callers may not). */
export function decode<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  // PostgreSQL text and jsonb cannot hold U+0000: refuse it up front rather than fail in the database.
  if (parsed.success && hasNul(parsed.data)) {
    throw new DomainError("validation_error", "Invalid body: strings must not contain U+0000", { details: [{ path: "", message: "must not contain U+0000" }] });
  }
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  throw new DomainError("validation_error", `Invalid body: ${details.map((d) => `${d.path || "(body)"}: ${d.message}`).join("; ")}`, { details });
}

function scopeOf(auth: AuthContext): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}

export function manageWebhooks(deps: Deps): RpcHandler {
  return async (req, ctx) => {
    const body = decode(schemas.WebhooksBody, req.body);
    const s = scopeOf(ctx.auth);
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
    return { body: { ...(await sendTestEvent(deps, scopeOf(ctx.auth), body)) } };
  };
}
