/** Every operation of the route table on a public listener: guarded in its own onRequest hook, then forwarded. */
import type { FastifyInstance } from "fastify";
import { BODY_LIMIT_BYTES, ROUTES } from "@treasury/contracts";
import type { GatewayDeps } from "./deps.ts";
import { createForward } from "./forward.ts";
import { createGuard } from "./guard.ts";
import { guardedRoute } from "./guarded-route.ts";

export function registerApiRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const guard = createGuard(deps);
  const forward = createForward(deps);
  for (const def of ROUTES) {
    const route = guardedRoute(def, deps.prefix);
    app.route({
      method: route.method,
      url: route.path,
      bodyLimit: route.bodyLimitBytes ?? BODY_LIMIT_BYTES,
      config: { rawBody: route.rawBody !== undefined },
      onRequest: (req, reply, done) => {
        req.routePath = route.path;
        if (reply.sent) return;
        const pending = guard(route, req, reply);
        // A guard that answered the request ends the chain by not calling done().
        if (pending === undefined) {
          if (!reply.sent) done();
        } else {
          pending.then(() => (reply.sent ? undefined : done()), done);
        }
      },
      handler: (req, reply) => forward(route, req, reply),
    });
  }
}
