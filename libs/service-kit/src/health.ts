import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import type { Registry } from "prom-client";

/** A readiness probe must answer quickly even when a dependency hangs. */
const CHECK_TIMEOUT_MS = 2000;

export interface Readiness {
  ok: boolean;
  checks: Record<string, string>;
}

/** "ok", or why the check failed (bounded by a timeout). */
export async function probe(check: () => Promise<unknown>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return "ok";
  } catch (e) {
    return e instanceof Error ? e.message || e.name : String(e);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The orchestrator's view of a service: /healthz (the process answers), /readyz (it can do work now) and
 * /metrics. It is not the public API, so it binds to HEALTH_HOST and has no auth.
 */
export async function startHealthServer(opts: {
  host: string;
  port: number;
  registry: Registry;
  readiness: () => Promise<Readiness>;
}): Promise<{ port: number; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    const r = await opts.readiness();
    return reply.code(r.ok ? 200 : 503).send({ status: r.ok ? "ok" : "unavailable", checks: r.checks });
  });
  app.get("/metrics", async (_req, reply) => {
    const text = await opts.registry.metrics();
    return reply.header("content-type", opts.registry.contentType).send(text);
  });
  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as AddressInfo).port;
  return { port, close: async () => void (await app.close()) };
}
