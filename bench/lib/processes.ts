/**
 * The benchmarked processes: each service as a child process started as deployed (allocator settings, V8 flags),
 * and what the kernel says each process has used (CPU time, scheduler run and wait times).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { repoRoot } from "@treasury/testing";

/** The allocator settings of the image (deploy/Dockerfile): every benchmarked process runs with them. */
export const DEPLOYED_MALLOC_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", MALLOC_TRIM_THRESHOLD_: "131072" };

/** The ledger's V8 flags as deployed (k8s/base/ledger.yaml NODE_OPTIONS): benchmarks run it the same way. */
export const LEDGER_NODE_OPTIONS = "--max-semi-space-size=64";
/** The gateway's V8 flags as deployed (k8s/base/gateway.yaml); BENCH_GATEWAY_NODE_OPTIONS overrides them ("" for none). */
export const GATEWAY_NODE_OPTIONS = process.env.BENCH_GATEWAY_NODE_OPTIONS ?? "--max-semi-space-size=64";

/** A child's NODE_OPTIONS entry, or nothing when the flags are empty or unset. */
export function nodeOptions(flags: string | undefined): { NODE_OPTIONS?: string } {
  return flags ? { NODE_OPTIONS: flags } : {};
}

export interface Child {
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Start `node --import tsx <file>`; resolves once `readyUrl` answers 200 (or the line `listening <port>`). */
export async function startChild(file: string, env: Record<string, string>, readyUrl?: string): Promise<Child & { port?: number }> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the child processes.
  const extraArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const proc = spawn(process.execPath, [...extraArgs, "--import", "tsx", file], {
    cwd: repoRoot(),
    env: { ...process.env, LOG_LEVEL: "warn", ...DEPLOYED_MALLOC_ENV, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // BENCH_CHILD_STDOUT_DIR keeps each child's stdout (e.g. --trace-gc output) in <dir>/<file's name>.<pid>.log.
  const keepDir = process.env.BENCH_CHILD_STDOUT_DIR;
  if (keepDir && proc.stdout) proc.stdout.pipe(createWriteStream(`${keepDir}/${basename(file, ".ts")}.${proc.pid}.log`));
  let port: number | undefined;
  const listening = new Promise<void>((resolve) => {
    proc.stdout?.on("data", (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) {
        port = Number(m[1]);
        resolve();
      }
    });
  });
  const deadline = Date.now() + 60_000;
  if (readyUrl) {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`${file} not ready`);
      const ok = await fetch(readyUrl).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } else {
    await Promise.race([listening, new Promise((_, rej) => setTimeout(() => rej(new Error(`${file} did not listen`)), 60_000))]);
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill("SIGTERM");
      setTimeout(() => proc.kill("SIGKILL"), 15_000).unref();
    });
  return port === undefined ? { proc, stop } : { proc, stop, port };
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / 100;
  } catch {
    return 0;
  }
}

/** CPU time (ms) used so far by every live process whose command name is `comm` (e.g. "postgres"). */
export function cpuMsByName(comm: string): number {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (name === comm) total += cpuMs(Number(pid));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

/** Nanoseconds a thread has spent on a CPU and runnable but waiting for one (Linux /proc schedstat). */
export interface SchedTimes {
  run: number;
  wait: number;
}

/**
 * A process's scheduler times: its main thread's (a Node event loop) or, with `allThreads`, summed over its
 * threads (nats-server's goroutines run on several). Undefined where /proc has no schedstat.
 */
export function schedTimes(pid: number | undefined, allThreads = false): SchedTimes | undefined {
  if (pid === undefined) return undefined;
  const read = (path: string): SchedTimes | undefined => {
    try {
      const [run, wait] = readFileSync(path, "utf8").trim().split(" ").map(Number);
      return run === undefined || wait === undefined || Number.isNaN(run) || Number.isNaN(wait) ? undefined : { run, wait };
    } catch {
      return undefined;
    }
  };
  if (!allThreads) return read(`/proc/${pid}/task/${pid}/schedstat`);
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const total = { run: 0, wait: 0 };
  for (const tid of tids) {
    const t = read(`/proc/${pid}/task/${tid}/schedstat`);
    if (t) [total.run, total.wait] = [total.run + t.run, total.wait + t.wait];
  }
  return total;
}
