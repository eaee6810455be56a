/**
 * The gateway, the ledger and one service holding sealed personal data, as real processes logging at trace: what
 * the log-hygiene tests send through, and whose every printed line they search afterwards.
 */
import { generateKeyRingEntry } from "@treasury/service-kit";
import { freePort, setupTestEnv, spawnService, type SpawnedService, type TestEnv } from "@treasury/testing";

export interface TracedStack {
  env: TestEnv;
  baseUrl: string;
  /** Stops every process (so each flushes its logs) and answers every line they printed. */
  stopAndReadLogs(): Promise<string[]>;
  close(): Promise<void>;
}

/** Starts ledger, `service` with a fresh PII key ring, and the gateway, each at LOG_LEVEL=trace. */
export async function startTracedStack(service: "kyc" | "tax"): Promise<TracedStack> {
  const env = await setupTestEnv();
  const children: SpawnedService[] = [];
  const start = async (name: string, extra: Record<string, string>) => {
    const child = spawnService(name, env.env(name as "gateway", { HEALTH_PORT: String(await freePort()), LOG_LEVEL: "trace", ...extra }));
    children.push(child);
    await child.ready;
  };
  const stop = async () => {
    for (const c of children) c.kill("SIGTERM");
    await Promise.all(children.map((c) => c.exited));
  };
  const port = await freePort();
  await start("ledger", {});
  await start(service, { PII_KEYS: generateKeyRingEntry(`${service}logs1`) });
  await start("gateway", { PORT: String(port), ALT_PORT: String(await freePort()) });
  return {
    env,
    baseUrl: `http://127.0.0.1:${port}`,
    async stopAndReadLogs() {
      await stop();
      return children.flatMap((c) => c.output());
    },
    async close() {
      await stop();
      await env.cleanup();
    },
  };
}
