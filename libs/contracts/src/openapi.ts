/** The OpenAPI 3.1 document, generated from the route table and its zod schemas (never hand-written). */
import { z } from "zod";
import { ERROR_CODES } from "./errors.ts";
import { API_VERSION, ROUTES, type RouteDef } from "./routes.ts";

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const s = z.toJSONSchema(schema, { unrepresentable: "any", io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}

function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, "{$1}");
}

function queryParameters(route: RouteDef): Record<string, unknown>[] {
  if (!route.query) return [];
  const s = jsonSchema(route.query) as { properties?: Record<string, unknown> };
  return Object.entries(s.properties ?? {}).map(([name, schema]) => ({ name, in: "query", required: false, schema }));
}

export function buildOpenApiDocument(serverUrl = "/"): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorResponse = { description: "Error envelope", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  for (const r of ROUTES) {
    const p = openApiPath(r.path);
    const pathParams = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    const op: Record<string, unknown> = {
      operationId: r.operation,
      summary: r.summary,
      tags: [r.service],
      parameters: [...pathParams, ...queryParameters(r)],
      security: r.scope === null ? [] : [{ apiKey: [] }],
      "x-required-scope": r.scope,
      "x-rate-limit-class": r.rateClass,
      responses: {
        [r.creates ? "201" : "200"]: {
          description: "Success envelope: {success: true, request_id, <named key>}",
          content: { "application/json": { schema: { type: "object" } } },
        },
        "400": errorResponse,
        "401": errorResponse,
        "403": errorResponse,
        "404": errorResponse,
        "409": errorResponse,
        "422": errorResponse,
        "429": errorResponse,
        "500": errorResponse,
      },
    };
    if (r.body) op.requestBody = { required: true, content: { "application/json": { schema: jsonSchema(r.body) } } };
    (paths[p] ??= {})[r.method.toLowerCase()] = op;
  }
  paths["/v1/health-check"] = {
    get: { operationId: "healthCheck", summary: "Gateway and service readiness (no key)", security: [], responses: { "200": { description: "ok" } } },
    post: { operationId: "healthCheckPost", summary: "Same as GET", security: [], responses: { "200": { description: "ok" } } },
  };
  return {
    openapi: "3.1.0",
    info: { title: "Platform Treasury API", version: API_VERSION },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
      schemas: {
        Error: {
          type: "object",
          required: ["success", "error", "error_code", "request_id"],
          properties: {
            success: { const: false },
            error: { type: "string" },
            error_code: { type: "string", enum: Object.keys(ERROR_CODES) },
            request_id: { type: "string" },
            hint: { type: "string" },
            retry_after: { type: "number" },
            details: { type: "array", items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } } },
          },
        },
      },
    },
    paths,
  };
}
