/**
 * `npm start` as a new user runs it (scripts/dev.ts): private PostgreSQL and NATS from the machine's binaries,
 * migrations, a sandbox org and key, every service as its own process, the base URL printed once all are ready;
 * Ctrl-C (SIGINT to the terminal's process group) stops everything, and the next start reuses the data.
 * Everything lives in a scratch DEV_DATA_DIR on free ports, so a developer's own stack is never touched.
 * Without the server binaries it names exactly what to install (as root, with the binaries' folders hidden in
 * a private mount namespace).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SERVICES } from "@treasury/contracts";
import { freePort, makeScratchDir, repoRoot, waitFor } from "@treasury/testing";
import { INSTALL_HINT, portAcceptsConnections } from "@treasury/testing/servers";
import { canHideServers, runWithoutServers } from "./without-servers.ts";

const dataDir = makeScratchDir("treasury-devstack-");
let running: ChildProcess | undefined;
/** Where the stack said PostgreSQL's data lives: .data/pg, or under /var/tmp when the postgres user cannot reach .data. */
let pgDataDir = join(dataDir, "pg");

/** The PostgreSQL data folder the stack announced (`initialising` on a first start, `starting` after). */
function announcedPgDir(out: string, verb: "initialising" | "starting"): string {
  const m = new RegExp(`${verb} PostgreSQL in (\\S+) on 127\\.0\\.0\\.1:`).exec(out);
  expect(m, `the stack names where PostgreSQL's data lives (${verb})`).not.toBeNull();
  return m![1]!;
}

afterAll(async () => {
  // A failed assertion can leave the stack up: its own shutdown stops services, NATS and PostgreSQL.
  if (running !== undefined && running.exitCode === null) {
    const exited = new Promise((resolve) => running?.once("exit", resolve));
    running.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
  }
  // Whatever is still up (a stack killed while starting, a broken shutdown): services, NATS, then PostgreSQL's
  // postmaster with SIGQUIT, its immediate shutdown.
  for (const { pid } of servicePids()) if (alive(pid)) process.kill(pid, "SIGKILL");
  const natsPid = pidIn(join(dataDir, "nats.pid"));
  if (natsPid !== undefined && alive(natsPid)) process.kill(natsPid, "SIGKILL");
  const postmaster = pidIn(join(pgDataDir, "postmaster.pid"));
  if (postmaster !== undefined && alive(postmaster)) process.kill(postmaster, "SIGQUIT");
  rmSync(dataDir, { recursive: true, force: true });
  if (!pgDataDir.startsWith(dataDir)) rmSync(dirname(pgDataDir), { recursive: true, force: true });
});

/** The pid on the first line of a pid file, if there is one. */
function pidIn(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").split("\n")[0]?.trim());
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}

/**
 * Eight consecutive ports nothing listens on, for the services' health endpoints: below Linux's ephemeral
 * range (32768 up), so no port the OS hands another test meanwhile can be one of them.
 */
async function healthPortBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const busy = await Promise.all(SERVICES.map((_, i) => portAcceptsConnections(base + i, "127.0.0.1")));
    if (!busy.some(Boolean)) return base;
  }
  throw new Error("no eight consecutive free ports");
}

const ports = { pg: await freePort(), nats: await freePort(), main: await freePort(), alt: await freePort(), health: await healthPortBase() };

interface Started {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The environment of a fresh machine: no running servers named, so the stack starts its own. */
function devEnv(logLevel = "warn"): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ["DATABASE_URL", "NATS_URL", "REDIS_URL", "NATS_PREFIX", "PORT", "ALT_PORT"]) delete env[k];
  return Object.assign(env, {
    DEV_DATA_DIR: dataDir,
    DEV_PG_PORT: String(ports.pg),
    DEV_NATS_PORT: String(ports.nats),
    DEV_HEALTH_PORT_BASE: String(ports.health),
    PORT: String(ports.main),
    ALT_PORT: String(ports.alt),
    LOG_LEVEL: logLevel,
  });
}

/** Starts the stack the way `npm start` does, in its own process group (a terminal's foreground job). */
async function start(logLevel?: string): Promise<Started> {
  const proc = spawn(process.execPath, ["--import", "tsx", join(repoRoot(), "scripts", "dev.ts")], {
    cwd: repoRoot(),
    env: devEnv(logLevel),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  running = proc;
  let text = "";
  proc.stdout!.on("data", (b: Buffer) => (text += b.toString()));
  proc.stderr!.on("data", (b: Buffer) => (text += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  // Up, or dead: whichever comes first (a stack that died is not waited for until the deadline).
  const died = exited.then((code) => {
    throw new Error(`npm start exited with ${code}:\n${text}`);
  });
  died.catch(() => undefined);
  await Promise.race([waitFor(() => text.includes("Treasury is up"), { timeoutMs: 150_000, intervalMs: 200 }), died]).catch((e: unknown) => {
    throw new Error(`npm start did not come up (exit ${proc.exitCode}):\n${text}`, { cause: e });
  });
  return { proc, output: () => text, exited };
}

function servicePids(): { name: string; pid: number }[] {
  const file = join(dataDir, "dev-services.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { name: string; pid: number }[]) : [];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function printed(output: string, label: string): string {
  const m = new RegExp(`${label}\\s*: (\\S+)`).exec(output);
  if (m?.[1] === undefined) throw new Error(`"${label}" not printed:\n${output}`);
  return m[1];
}

async function stopAndCheck(stack: Started, signal: "SIGINT" | "SIGTERM", opts: { group: boolean }, pids: { name: string; pid: number }[]): Promise<void> {
  process.kill(opts.group ? -stack.proc.pid! : stack.proc.pid!, signal);
  const code = await Promise.race([stack.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 60_000))]);
  expect(code, stack.output()).toBe(0);
  expect(stack.output()).toContain("[dev] stopped");
  expect(pids.filter(({ pid }) => alive(pid)).map(({ name }) => name)).toEqual([]);
  for (const port of [ports.pg, ports.nats, ports.main, ports.alt, ports.health])
    expect(await portAcceptsConnections(port, "127.0.0.1"), `port ${port}`).toBe(false);
}

describe("npm start", () => {
  let orgId = "";
  let testKey = "";

  it("starts every service on private servers, prints the base URL and a working sandbox key, and Ctrl-C stops it all", { timeout: 240_000 }, async () => {
    const stack = await start("info");
    const out = stack.output();
    // Each service's own log lines (pino JSON), prefixed with its name (a line can still be in its pipe).
    const unprefixed = () => SERVICES.filter((name) => !new RegExp(`^\\[${name}\\]\\s+\\{.*"msg":"ready"`, "m").test(stack.output()));
    await waitFor(() => unprefixed().length === 0, { timeoutMs: 10_000 }).catch(() => expect(unprefixed()).toEqual([]));
    const base = printed(out, "API base URL");
    expect(base).toBe(`http://127.0.0.1:${ports.main}`);
    expect(printed(out, "Alt URL")).toBe(`http://127.0.0.1:${ports.alt}`);
    testKey = printed(out, "Test API key");
    orgId = printed(out, "Org");
    expect(JSON.parse(readFileSync(join(dataDir, "dev-credentials.json"), "utf8"))).toEqual({
      org_id: orgId,
      test_api_key: testKey,
      stripe_webhook_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    // .data is 0700: as root, the postgres user cannot reach it and the data goes under /var/tmp instead.
    pgDataDir = announcedPgDir(out, "initialising");
    expect(pgDataDir === join(dataDir, "pg") || /^\/var\/tmp\/treasury-dev-[0-9a-f]{8}\/pg$/.test(pgDataDir), pgDataDir).toBe(true);

    const health = await fetch(`${base}/v1/health-check`);
    const body = (await health.json()) as { data: { status: string; services: Record<string, string> } };
    expect(health.status).toBe(200);
    expect(body.data.status).toBe("ok");
    expect(Object.keys(body.data.services).sort()).toEqual([...SERVICES].sort());

    const listed = await fetch(`${base}/v1/participants`, { headers: { "x-api-key": testKey } });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { success: boolean }).success).toBe(true);

    const pids = servicePids();
    expect(pids.map((p) => p.name).sort()).toEqual([...SERVICES].sort());
    expect(pids.every(({ pid }) => alive(pid))).toBe(true);

    // What a terminal's Ctrl-C does: SIGINT to the foreground process group.
    await stopAndCheck(stack, "SIGINT", { group: true }, pids);
    expect(existsSync(join(dataDir, "dev-services.json"))).toBe(false);
  });

  it("reuses the data, org and key on the next start, restarts a service that dies, and stops on SIGTERM", { timeout: 240_000 }, async () => {
    expect(orgId).not.toBe("");
    const stack = await start();
    const out = stack.output();
    expect(announcedPgDir(out, "starting")).toBe(pgDataDir);
    expect(out).toContain(`reusing org ${orgId}`);
    expect(printed(out, "Test API key")).toBe(testKey);
    const listed = await fetch(`http://127.0.0.1:${ports.main}/v1/participants`, { headers: { "x-api-key": testKey } });
    expect(listed.status).toBe(200);
    // A service that dies is started again, and the rest of the stack (servers included) keeps running.
    const before = servicePids().find((p) => p.name === "ledger")?.pid ?? 0;
    process.kill(before, "SIGKILL");
    await waitFor(() => stack.output().includes("restarting ledger"), { timeoutMs: 30_000 });
    await waitFor(
      async () => {
        const again = servicePids().find((p) => p.name === "ledger")?.pid ?? 0;
        if (again === before || !alive(again)) return false;
        const r = await fetch(`http://127.0.0.1:${ports.main}/v1/participants`, { headers: { "x-api-key": testKey } });
        return r.status === 200;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(stack.proc.exitCode).toBeNull();
    await stopAndCheck(stack, "SIGTERM", { group: false }, servicePids());
  });
});

describe.runIf(canHideServers)("npm start on a machine without the servers", () => {
  it("stops before starting anything and names exactly what to install", { timeout: 60_000 }, () => {
    const res = runWithoutServers(`exec "${process.execPath}" --import tsx scripts/dev.ts`, { cwd: repoRoot(), env: devEnv(), timeoutMs: 50_000 });
    expect(res.status, res.stdout + res.stderr).toBe(1);
    expect(res.stderr).toContain("missing system dependency");
    expect(res.stderr).toContain(INSTALL_HINT.postgres);
    expect(res.stderr).toContain(INSTALL_HINT.nats);
    expect(existsSync(join(dataDir, "dev-services.json"))).toBe(false);
  });
});
