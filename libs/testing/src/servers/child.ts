// NATS and Redis as child processes of this one, from the machine's binaries.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  findBinary,
  INSTALL_HINT,
  MissingBinaryError,
  pollIntervalMs,
  portAcceptsConnections,
  serverStartTimeoutMs,
  serverStopTimeoutMs,
  sleep,
  type RunningServer,
} from "./host.ts";

export interface NatsServer extends RunningServer {
  port: number;
  pid: number | undefined;
}

export interface RedisServer extends RunningServer {
  port: number;
  pid: number | undefined;
}

interface ChildServerOptions {
  binary: string;
  args: string[];
  port: number;
  label: string;
  /** Appends the server's output to this file; otherwise only the last lines are kept, for error messages. */
  logFile?: string | undefined;
  /** Put the server in its own process group, so a terminal Ctrl-C reaches only its parent (dev stack). */
  detached?: boolean | undefined;
}

async function startChildServer(opts: ChildServerOptions): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  if (await portAcceptsConnections(opts.port)) {
    throw new Error(`${opts.label}: port ${opts.port} on 127.0.0.1 is already in use. Stop what listens there or choose another port.`);
  }
  const child = spawn(opts.binary, opts.args, { cwd: "/", stdio: ["ignore", "pipe", "pipe"], detached: opts.detached ?? false });
  const recent: string[] = [];
  const onData = (b: Buffer): void => {
    const text = b.toString();
    if (opts.logFile !== undefined) writeFileSync(opts.logFile, text, { flag: "a" });
    recent.push(...text.split("\n").filter((l) => l !== ""));
    if (recent.length > 40) recent.splice(0, recent.length - 40);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  let exited = false;
  const exitedPromise = new Promise<void>((r) => child.once("exit", () => ((exited = true), r())));
  let spawnError: Error | undefined;
  child.once("error", (err) => (spawnError = err));

  const deadline = Date.now() + serverStartTimeoutMs;
  for (;;) {
    if (exited) throw new Error(`${opts.label} exited during start (exit ${child.exitCode ?? child.signalCode}):\n${recent.join("\n")}`);
    if (spawnError !== undefined) throw new Error(`${opts.label} could not be started: ${spawnError.message}`);
    if (await portAcceptsConnections(opts.port)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${opts.label} did not listen on 127.0.0.1:${opts.port} within ${serverStartTimeoutMs} ms:\n${recent.join("\n")}`);
    }
    await sleep(pollIntervalMs);
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (exited) return;
      child.kill("SIGTERM");
      const timer = sleep(serverStopTimeoutMs).then(() => "timeout" as const);
      if ((await Promise.race([exitedPromise, timer])) === "timeout") {
        child.kill("SIGKILL");
        await exitedPromise;
      }
    })();
    return stopping;
  };
  return { child, stop };
}

export interface StartNatsOptions {
  storeDir: string;
  port: number;
  logFile?: string;
  /** Written by nats-server (-P); a server left from a previous run is found and stopped through it. */
  pidFile?: string;
  detached?: boolean;
  /**
   * A configuration file (e.g. the `authorization` block of natsServerAuthorization(), ADR 0011); the command
   * line's listen address, port and store folder win over it.
   */
  configFile?: string;
  /** The server's name (`server_name`): a JetStream cluster tells its nodes apart by it. */
  serverName?: string;
  /** The monitoring port (`/healthz`, `/jsz`), on 127.0.0.1. */
  monitorPort?: number;
  /** Joins a cluster: listens for routes on `port` and dials the others' route ports (all on 127.0.0.1). */
  cluster?: { name: string; port: number; routes: number[] };
}

/** Starts `nats-server -js` on 127.0.0.1:<port> with its JetStream store in `storeDir`. */
export async function startNats(opts: StartNatsOptions): Promise<NatsServer> {
  const binary = findBinary("nats-server");
  if (binary === undefined) throw new MissingBinaryError(INSTALL_HINT.nats);
  const storeDir = resolve(opts.storeDir);
  mkdirSync(storeDir, { recursive: true });
  const args = [...(opts.configFile !== undefined ? ["-c", resolve(opts.configFile)] : []), "-js", "-a", "127.0.0.1", "-p", String(opts.port), "-sd", storeDir];
  if (opts.serverName !== undefined) args.push("-n", opts.serverName);
  if (opts.monitorPort !== undefined) args.push("-m", String(opts.monitorPort));
  if (opts.cluster !== undefined) {
    const { name, port, routes } = opts.cluster;
    const routeUrls = routes.map((p) => `nats-route://127.0.0.1:${p}`).join(",");
    args.push("--cluster_name", name, "--cluster", `nats://127.0.0.1:${port}`, "--routes", routeUrls);
  }
  if (opts.pidFile !== undefined) {
    await stopLeftoverByPidFile(opts.pidFile, "nats-server");
    args.push("-P", resolve(opts.pidFile));
  }
  const { child, stop } = await startChildServer({ binary, args, port: opts.port, label: "nats-server", logFile: opts.logFile, detached: opts.detached });
  return { url: `nats://127.0.0.1:${opts.port}`, port: opts.port, pid: child.pid, stop };
}

/**
 * Stops a server that an earlier run of ours started and left behind (its parent was killed with -9).
 * The pid is trusted only when /proc says it is still that program.
 */
async function stopLeftoverByPidFile(pidFile: string, programName: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 1) return;
  let cmdline = "";
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return; // not running
  }
  if (!cmdline.includes(programName)) return;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + serverStopTimeoutMs;
  while (Date.now() < deadline && existsSync(`/proc/${pid}`)) await sleep(pollIntervalMs);
  if (existsSync(`/proc/${pid}`)) process.kill(pid, "SIGKILL");
}

export interface StartRedisOptions {
  port: number;
  detached?: boolean;
}

/** Starts a Redis that keeps nothing on disk, on 127.0.0.1:<port>. */
export async function startRedis(opts: StartRedisOptions): Promise<RedisServer> {
  const binary = findBinary("redis-server");
  if (binary === undefined) throw new MissingBinaryError(INSTALL_HINT.redis);
  const args = ["--port", String(opts.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "/tmp"];
  const { child, stop } = await startChildServer({ binary, args, port: opts.port, label: "redis-server", detached: opts.detached });
  return { url: `redis://127.0.0.1:${opts.port}`, port: opts.port, pid: child.pid, stop };
}
