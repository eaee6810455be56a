/**
 * Benchmark-only process (BENCH_FLOOR=1 in bench:gateway): Fastify plus the kit's NATS round trip to the trivial
 * service, and nothing else (no key, scope, limit, validation, hooks, spans or metrics). What this does per
 * second is the most any gateway built on these parts could do; the gateway's own work is the difference.
 */
import Fastify from "fastify";
import { connect } from "@nats-io/transport-node";
import { rpcSubject } from "@treasury/contracts";
import { rpcForward } from "@treasury/service-kit";

const natsUrl = process.env.NATS_URL;
if (natsUrl === undefined) throw new Error("NATS_URL is required");
const nc = await connect({ servers: natsUrl });
// The trivial service registers as the ledger's listParticipants, unprefixed (bench/trivial-service.ts).
const SUBJECT = rpcSubject("", "ledger", "listParticipants");
const app = Fastify({ logger: false });
app.get("/v1/participants", async (_req, reply) => {
  const payload = {
    auth: { org_id: "o", livemode: false, key_id: "k", scopes: null, request_id: "r" },
    params: {},
    query: { limit: 25, offset: 0 },
    body: null,
    deadline: Date.now() + 10000,
    alt_base_url: "x",
  };
  const r = await rpcForward(nc, SUBJECT, payload, { timeoutMs: 10000, requestId: "r" });
  if (!r.ok) return reply.code(500).send(r.error);
  return reply
    .code(200)
    .type("application/json; charset=utf-8")
    .send(`{"success":true,${r.bodyJson.slice(1)}`);
});
await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`listening ${String((app.server.address() as { port: number }).port)}\n`);
process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
