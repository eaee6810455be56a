/**
 * `DEV_NATS_CLUSTER=3 npm start` runs the dev stack on a three-node NATS JetStream cluster: three nodes listen on
 * DEV_NATS_PORT and the next two, the EVENTS stream has three replicas, the services and the operator's URL name all
 * three, a write still succeeds after the stream leader's kill -9, and Ctrl-C stops every node. Everything lives in a
 * scratch DEV_DATA_DIR on free ports, so a developer's own stack is never touched.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { SERVICES } from "@treasury/contracts";
import { parseNatsUrl } from "@treasury/service-kit";
import { freePort, makeScratchDir, repoRoot, waitFor } from "@treasury/testing";
import { portAcceptsConnections } from "@treasury/testing/servers";

const dataDir = makeScratchDir("treasury-devcluster-");
let stack: ChildProcess | undefined;
let output = "";

afterAll(async () => {
  if (stack !== undefined && stack.exitCode === null) {
    const exited = new Promise((resolve) => stack?.once("exit", resolve));
    process.kill(-stack.pid!, "SIGINT");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
  }
  for (const node of ["n1", "n2", "n3"]) {
    const pid = pidIn(join(dataDir, "nats-cluster", `${node}.pid`));
    if (pid !== undefined) killQuietly(pid, "SIGKILL");
  }
  const pgDir = /PostgreSQL in (\S+) on 127/.exec(output)?.[1];
  const postmaster = pgDir === undefined ? undefined : pidIn(join(pgDir, "postmaster.pid"));
  if (postmaster !== undefined) killQuietly(postmaster, "SIGQUIT");
  rmSync(dataDir, { recursive: true, force: true });
  if (pgDir !== undefined && !pgDir.startsWith(dataDir)) rmSync(join(pgDir, ".."), { recursive: true, force: true });
});

function pidIn(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, "utf8").split("\n")[0]?.trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** `count` consecutive ports nothing listens on, below Linux's ephemeral range (so none is handed out meanwhile). */
async function freeRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const busy = await Promise.all(Array.from({ length: count }, (_, i) => portAcceptsConnections(base + i, "127.0.0.1")));
    if (!busy.some(Boolean)) return base;
  }
  throw new Error(`no ${count} free ports`);
}

it("runs the stack on three NATS nodes with a three-replica EVENTS stream that survives its leader's kill -9", { timeout: 240_000 }, async () => {
  // The nodes' client, route (+10) and monitoring (+20) ports all lie in 23 free ones.
  const natsBase = await freeRange(23);
  const ports = { pg: await freePort(), main: await freePort(), alt: await freePort(), health: await freeRange(SERVICES.length) };
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ["DATABASE_URL", "NATS_URL", "REDIS_URL", "NATS_PREFIX", "EVENTS_REPLICAS"]) delete env[k];
  Object.assign(env, {
    DEV_NATS_CLUSTER: "3",
    DEV_DATA_DIR: dataDir,
    DEV_PG_PORT: String(ports.pg),
    DEV_NATS_PORT: String(natsBase),
    DEV_HEALTH_PORT_BASE: String(ports.health),
    PORT: String(ports.main),
    ALT_PORT: String(ports.alt),
    LOG_LEVEL: "warn",
  });
  const proc = spawn(process.execPath, ["--import", "tsx", join(repoRoot(), "scripts", "dev.ts")], {
    cwd: repoRoot(),
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  stack = proc;
  proc.stdout!.on("data", (b: Buffer) => (output += b.toString()));
  proc.stderr!.on("data", (b: Buffer) => (output += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  await waitFor(() => output.includes("Treasury is up") || proc.exitCode !== null, { timeoutMs: 150_000, intervalMs: 200 });
  expect(output).toContain("Treasury is up");

  // Three nodes, each its own process, and the URL the stack prints and gives the operator's CLI names all three.
  const clientPorts = [natsBase, natsBase + 1, natsBase + 2];
  for (const port of clientPorts) expect(await portAcceptsConnections(port, "127.0.0.1"), `node on ${port}`).toBe(true);
  const nodePids = ["n1", "n2", "n3"].map((n) => pidIn(join(dataDir, "nats-cluster", `${n}.pid`)));
  expect(new Set(nodePids).size, output).toBe(3);
  const operatorUrl = (JSON.parse(readFileSync(join(dataDir, "dev-stack.json"), "utf8")) as { nats_url: string }).nats_url;
  expect(parseNatsUrl(operatorUrl)).toMatchObject({ server: clientPorts.map((p) => `nats://127.0.0.1:${p}`).join(","), user: "admin" });

  // The EVENTS stream keeps a replica on every node.
  const streamInfo = async (monitorPort: number) => {
    const jsz = (await (await fetch(`http://127.0.0.1:${monitorPort}/jsz?accounts=true&streams=true&config=true`)).json()) as {
      account_details?: { stream_detail?: { name: string; config?: { num_replicas?: number }; cluster?: { leader?: string } }[] }[];
    };
    return jsz.account_details?.flatMap((a) => a.stream_detail ?? []).find((s) => s.name === "EVENTS");
  };
  const events = await streamInfo(natsBase + 20);
  expect(events?.config?.num_replicas, output).toBe(3);
  const leader = events?.cluster?.leader ?? "";
  expect(["n1", "n2", "n3"]).toContain(leader);

  // Its leader killed with -9: the services carry on over the two other nodes, and a write still goes through.
  const testKey = /Test API key\s*: (\S+)/.exec(output)?.[1] ?? "";
  const leaderIndex = Number(leader.slice(1)) - 1;
  killQuietly(nodePids[leaderIndex]!, "SIGKILL");
  const other = natsBase + 20 + ((leaderIndex + 1) % 3);
  await waitFor(
    async () => {
      const now = (await streamInfo(other))?.cluster?.leader;
      return now !== undefined && now !== "" && now !== leader;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  await waitFor(
    async () => {
      const r = await fetch(`http://127.0.0.1:${ports.main}/v1/participants`, {
        method: "POST",
        headers: { "x-api-key": testKey, "content-type": "application/json", "idempotency-key": "cluster-1" },
        body: JSON.stringify({ participant_id: "after_leader_loss", default_split_percent: 80 }),
      });
      return r.status === 201 || r.status === 200;
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );

  // Ctrl-C: the services, the two nodes left and PostgreSQL stop.
  process.kill(-proc.pid!, "SIGINT");
  expect(await Promise.race([exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 60_000))]), output).toBe(0);
  for (const port of [...clientPorts, ports.pg, ports.main]) expect(await portAcceptsConnections(port, "127.0.0.1"), `port ${port}`).toBe(false);
});
