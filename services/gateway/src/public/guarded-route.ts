/** A route of the table with what the gateway derives from it once, at start, rather than per request. */
import { SpanKind, type SpanOptions } from "@opentelemetry/api";
import { rpcSubject, type RouteDef } from "@treasury/contracts";

export type GuardedRoute = RouteDef & { subject: string; spanName: string; spanOptions: SpanOptions; hasParams: boolean };

export function guardedRoute(def: RouteDef, prefix: string): GuardedRoute {
  return {
    ...def,
    subject: rpcSubject(prefix, def.service, def.operation),
    spanName: `HTTP ${def.method} ${def.path}`,
    spanOptions: { kind: SpanKind.SERVER, attributes: { "http.request.method": def.method, "http.route": def.path, "treasury.operation": def.operation } },
    hasParams: def.path.includes(":"),
  };
}
