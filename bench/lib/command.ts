/**
 * A command a benchmark waits for (pgbench, psql), run without holding the event loop.
 *
 * Why not spawnSync: the load generator's keep-alive sockets stay in its pool while the command runs. The gateway
 * closes a socket idle for its keepAliveTimeout (Fastify's 72 s), and undici drops one itself a little earlier
 * (the Keep-Alive hint less 2 s); either needs the event loop to run, for the timer or to read the server's FIN.
 * A pgbench sweep held the loop for longer than 72 s, so every socket the gateway had closed meanwhile was still
 * in the pool when it ended, and the next closed loop sent one request on each of them: "other side closed", one
 * failed flow per client. With the loop free the pool never hands out a socket the server has closed.
 */
import { spawn } from "node:child_process";

export interface CommandOptions {
  env?: NodeJS.ProcessEnv;
  /** The command is killed (SIGKILL) after this long, and the run fails. */
  timeoutMs: number;
}

/** Runs `cmd args`; answers its stdout then its stderr, or rejects (exit status or signal, and its stderr). */
export function runCommand(cmd: string, args: readonly string[], opts: CommandOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, opts.timeoutMs);
    // A command that cannot start (ENOENT) emits "error" (and maybe "close"); the first settlement wins.
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) return resolve(stdout + stderr);
      const how = timedOut ? `killed after ${opts.timeoutMs} ms` : signal === null ? `exit status ${String(code)}` : `signal ${signal}`;
      reject(new Error(`${cmd} ${args.join(" ")} failed (${how}): ${stderr}`));
    });
  });
}
