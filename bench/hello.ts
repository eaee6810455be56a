/** Benchmark baseline: a bare Fastify hello-world on the same machine, in its own process. */
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.get("/", async () => ({ hello: "world" }));
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
process.stdout.write(`listening ${String((app.server.address() as { port: number }).port)}\n`);
process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
