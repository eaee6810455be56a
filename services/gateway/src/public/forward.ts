/**
 * A guarded request on its way to the owning service: path, query and body validated, then one NATS request
 * with the caller's auth context, and the service's answer wrapped in the envelope (or, for a route that may
 * answer a file, that file).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { unstorableStringError, validationProblem, type AuthContext, type FileAnswer } from "@treasury/contracts";
import { rpcForward } from "@treasury/service-kit";
import { fromRpcError, sendError, type ErrorAnswer } from "../envelope.ts";
import type { GatewayDeps } from "./deps.ts";
import type { GuardedRoute } from "./guarded-route.ts";

/** Ids in paths: anything else cannot name a resource, and must not reach a service's SQL as text. */
export const PATH_PARAM_RE = /^[A-Za-z0-9_.:@-]{1,200}$/;

export type Forward = (route: GuardedRoute, req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** A request's input as the service receives it, or the answer that refuses it. */
type Checked<T> = { ok: true; value: T } | { ok: false; refusal: ErrorAnswer };

export function createForward(deps: GatewayDeps): Forward {
  return async (route, req, reply) => {
    const params = (req.params ?? {}) as Record<string, string>;
    const badParams = paramsRefusal(route, params);
    if (badParams !== undefined) return sendError(req, reply, badParams);
    const query = checkQuery(route, req);
    if (!query.ok) return sendError(req, reply, query.refusal);
    const body = checkBody(route, req);
    if (!body.ok) return sendError(req, reply, body.refusal);
    const payload = {
      auth: authContext(req),
      params,
      query: query.value,
      body: body.value ?? null,
      deadline: Date.now() + deps.rpcTimeoutMs,
      alt_base_url: deps.altBaseUrl(),
      client_ip: req.ip,
    };
    const result = await rpcForward(deps.nc, route.subject, payload, {
      timeoutMs: deps.rpcTimeoutMs,
      requestId: String(req.id),
      ...(req.otel ? { parent: req.otel.ctx } : {}),
    });
    if (!result.ok) {
      if (result.error.code === "internal_error") req.log.error({ service: route.service, error: result.error }, "service answered internal_error");
      return sendError(req, reply, fromRpcError(result.error));
    }
    if (route.fileResponse === true) {
      const file = fileOf(result.bodyJson);
      if (file !== undefined) return sendFile(reply, result.status, file);
    }
    if (route.cacheControl !== undefined) reply.header("Cache-Control", route.cacheControl);
    // The envelope around the service's body, as text: the body is neither parsed nor serialised here.
    const head = `{"success":true,"request_id":${JSON.stringify(String(req.id))}`;
    const json = result.bodyJson === "{}" ? `${head}}` : `${head},${result.bodyJson.slice(1)}`;
    return reply.code(result.status).type("application/json; charset=utf-8").send(json);
  };
}

function paramsRefusal(route: GuardedRoute, params: Record<string, string>): ErrorAnswer | undefined {
  const badParams = route.hasParams ? Object.entries(params).filter(([, v]) => !PATH_PARAM_RE.test(v)) : [];
  if (badParams.length === 0) return undefined;
  const details = badParams.map(([k]) => ({ path: `params.${k}`, message: "must be 1–200 characters of A-Z a-z 0-9 _ . : @ -" }));
  return { code: "validation_error", message: `Invalid path parameter ${badParams.map(([k]) => k).join(", ")}`, details };
}

function checkQuery(route: GuardedRoute, req: FastifyRequest): Checked<unknown> {
  const query: unknown = req.query ?? {};
  const badQuery = unstorableStringError(query, "Query");
  if (badQuery !== undefined) return { ok: false, refusal: { code: badQuery.code, message: badQuery.message, details: badQuery.details } };
  if (!route.query) return { ok: true, value: query };
  const q = route.query.safeParse(query);
  if (!q.success) {
    const { details, code } = validationProblem(q.error);
    return { ok: false, refusal: { code, message: `Invalid query: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`, details } };
  }
  return { ok: true, value: q.data };
}

function checkBody(route: GuardedRoute, req: FastifyRequest): Checked<unknown> {
  let body: unknown = route.method !== "GET" ? (req.body ?? {}) : undefined;
  if (route.rawBody !== undefined) body = rawBodyOf(req, route.rawBody.signatureHeader);
  if (!route.body) return { ok: true, value: body };
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return {
      ok: false,
      refusal: { code: "validation_error", message: "Request body must be a JSON object", details: [{ path: "", message: "must be a JSON object" }] },
    };
  }
  const b = route.body.safeParse(body);
  if (!b.success) {
    const { details, code } = validationProblem(b.error);
    return { ok: false, refusal: { code, message: `Invalid body: ${details.map((d) => `${d.path || "(body)"}: ${d.message}`).join("; ")}`, details } };
  }
  return { ok: true, value: b.data };
}

/** The body of a `rawBody` route as the owning service receives it: its exact bytes and the signature header. */
function rawBodyOf(req: FastifyRequest, signatureHeader: string): { payload_base64: string; signature: string | null } {
  const h = req.headers[signatureHeader];
  return { payload_base64: Buffer.isBuffer(req.body) ? req.body.toString("base64") : "", signature: typeof h === "string" ? h : null };
}

/** Who is calling, for the service: the key's org, environment and scopes; empty on a route that takes no key. */
function authContext(req: FastifyRequest): AuthContext {
  const key = req.key;
  return key
    ? { org_id: key.orgId, livemode: key.livemode, key_id: key.keyId, scopes: key.scopes, request_id: String(req.id) }
    : { org_id: "", livemode: false, key_id: "", scopes: [], request_id: String(req.id) };
}

/** The file a `fileResponse` route's service answered, if it answered one (only these bodies are parsed here). */
function fileOf(bodyJson: string): FileAnswer | undefined {
  const body = JSON.parse(bodyJson) as { file?: Partial<FileAnswer> };
  const f = body.file;
  if (typeof f?.content !== "string" || typeof f.content_type !== "string" || typeof f.filename !== "string") return undefined;
  return { content: f.content, content_type: f.content_type, filename: f.filename, ...(f.encoding === "base64" ? { encoding: "base64" as const } : {}) };
}

function sendFile(reply: FastifyReply, status: number, file: FileAnswer): FastifyReply {
  // A file has no envelope: its request id is in the X-Request-Id header every answer carries (hooks.ts).
  return reply
    .code(status)
    .header("Content-Disposition", `attachment; filename="${file.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`)
    .type(file.content_type)
    .send(file.encoding === "base64" ? Buffer.from(file.content, "base64") : file.content);
}
