/**
 * Runs a shell command on this machine as if PostgreSQL and nats-server were not installed: their folders
 * (nats-server in /usr/sbin; PostgreSQL's binaries under /usr/lib/postgresql, where pg_config points too) are
 * covered by an empty folder in a private mount namespace, which the rest of the machine never sees. Needs root
 * and a working `unshare`.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { makeScratchDir } from "@treasury/testing";
import { isRoot } from "@treasury/testing/servers";

export const canHideServers = isRoot() && spawnSync("unshare", ["--mount", "true"]).status === 0;

export function runWithoutServers(command: string, opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): SpawnSyncReturns<string> {
  const empty = makeScratchDir("treasury-empty-");
  try {
    const hide = ["/usr/sbin", "/usr/lib/postgresql"].filter((d) => existsSync(d)).map((d) => `mount --bind ${empty} ${d}`);
    return spawnSync("unshare", ["--mount", "--propagation", "private", "sh", "-c", [...hide, command].join(" && ")], {
      cwd: opts.cwd,
      env: opts.env,
      encoding: "utf8",
      timeout: opts.timeoutMs,
    });
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}
