// A service as a real child process, for tests that must kill one (kill -9 mid-operation, restart, recover).
// Everything else should build services in-process with createService and test deps.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { repoRoot } from "./paths.ts";

export interface SpawnedService {
  proc: ChildProcess;
  /** Resolves when GET /readyz on the service's HEALTH_PORT answers 200; rejects if it exits first or times out. */
  ready: Promise<void>;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
  /** Everything it printed so far (stdout and stderr), one entry per line. */
  output(): string[];
}

export interface SpawnServiceOptions {
  /** How long `ready` waits (default 30 000 ms). */
  readyTimeoutMs?: number;
  /** Also print its lines to this process's stderr, prefixed (default: when TEST_LOG_LEVEL is set). */
  echo?: boolean;
  /**
   * The script to run, relative to the repository root (default `services/<name>/src/main.ts`): a test's own
   * entry that builds the service with test dependencies (a crash point, say).
   */
  entry?: string;
}

const outputLinesMax = 5_000;
const readyPollIntervalMs = 100;
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** A test worker that dies must not leave its services running. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

/**
 * Starts `node --import tsx services/<name>/src/main.ts` (or `opts.entry`) with `env` on top of this process's environment.
 * `env.HEALTH_PORT` must be an explicit free port (freePort()), since `ready` polls it.
 */
export function spawnService(name: string, env: Record<string, string>, opts: SpawnServiceOptions = {}): SpawnedService {
  const healthPort = Number(env["HEALTH_PORT"]);
  if (!Number.isInteger(healthPort) || healthPort <= 0) {
    throw new Error(`spawnService(${name}): pass an explicit HEALTH_PORT (use freePort()); got ${String(env["HEALTH_PORT"])}`);
  }
  const healthHost = env["HEALTH_HOST"] ?? "127.0.0.1";
  const root = repoRoot();
  const entry = opts.entry === undefined ? join(root, "services", name, "src", "main.ts") : join(root, opts.entry);
  if (!existsSync(entry)) throw new Error(`spawnService: ${entry} does not exist`);

  installExitHook();
  const proc = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: root,
    env: { ...process.env, HEALTH_HOST: healthHost, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(proc);

  const lines: string[] = [];
  const echo = opts.echo ?? (process.env["TEST_LOG_LEVEL"] !== undefined && process.env["TEST_LOG_LEVEL"] !== "");
  for (const stream of [proc.stdout, proc.stderr]) {
    if (stream === null) continue;
    createInterface({ input: stream }).on("line", (line) => {
      lines.push(line);
      if (lines.length > outputLinesMax) lines.splice(0, lines.length - outputLinesMax);
      if (echo) process.stderr.write(`[${name}] ${line}\n`);
    });
  }

  let hasExited = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    proc.once("exit", (code, signal) => {
      hasExited = true;
      running.delete(proc);
      resolveExit({ code, signal });
    });
  });

  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const ready = (async () => {
    const deadline = Date.now() + readyTimeoutMs;
    const url = `http://${healthHost}:${healthPort}/readyz`;
    while (Date.now() < deadline) {
      if (hasExited) {
        throw new Error(`${name} exited before it was ready (exit ${proc.exitCode ?? proc.signalCode}):\n${lines.slice(-30).join("\n")}`);
      }
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
        await res.body?.cancel();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, readyPollIntervalMs));
    }
    throw new Error(`${name} was not ready (GET ${url} → 200) within ${readyTimeoutMs} ms:\n${lines.slice(-30).join("\n")}`);
  })();
  // A test that never awaits `ready` must not crash the worker with an unhandled rejection.
  ready.catch(() => {});

  return {
    proc,
    ready,
    exited,
    kill: (signal: NodeJS.Signals = "SIGTERM") => {
      if (!hasExited) proc.kill(signal);
    },
    output: () => [...lines],
  };
}
