// What starting a private server needs from the machine: free ports, the servers' binaries, Unix users and folder
// permissions, and running a command to completion.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, chmodSync, constants, existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { createServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";

/** A server this process started; `stop()` is idempotent. */
export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

/** What to install, per server, on Debian/Ubuntu (the only family the project's machines run). */
export const INSTALL_HINT = {
  postgres:
    "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found. Install them: `apt-get install postgresql` (Debian/Ubuntu), or set TEST_DATABASE_URL / DATABASE_URL to a running server.",
  nats: "nats-server not found. Install it: `apt-get install nats-server` (Debian/Ubuntu), or set TEST_NATS_URL / NATS_URL to a running nats-server started with -js.",
  redis: "redis-server not found. Install it: `apt-get install redis-server` (Debian/Ubuntu), or set TEST_REDIS_URL to a running Redis.",
} as const;

export class MissingBinaryError extends Error {
  override readonly name = "MissingBinaryError";
}

export const serverStartTimeoutMs = 60_000;
export const serverStopTimeoutMs = 15_000;
export const pollIntervalMs = 100;
/** Directories searched after PATH: sbin folders are often missing from a non-root PATH. */
const extraBinDirs = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** Ports freePort() has handed out in this process: the OS may pick a just-closed port again. */
const handedOut = new Set<number>();

/**
 * A TCP port that was free a moment ago on 127.0.0.1 (the OS picks it), never one this process was given
 * before: a server given two "free" ports for two listeners (e.g. PORT and HEALTH_PORT) must not get one twice.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await osFreePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("freePort: the OS kept offering ports already handed out");
}

function osFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      if (address === null || typeof address === "string") {
        srv.close();
        reject(new Error("freePort: no port assigned"));
        return;
      }
      const { port } = address;
      srv.close(() => resolvePort(port));
    });
  });
}

/** True when something accepts TCP connections on 127.0.0.1:<port>. */
export async function portAcceptsConnections(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolveOpen) => {
    const socket = netConnect({ port, host });
    const done = (open: boolean): void => {
      socket.destroy();
      resolveOpen(open);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * A new temporary folder (under os.tmpdir()) that the `postgres` user can traverse: mkdtemp makes folders
 * 0700, which would keep a PostgreSQL started as root (running as `postgres`) out of its data folder.
 */
export function makeScratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** First executable `name` on PATH or in the usual sbin/bin folders, else undefined. */
export function findBinary(name: string): string | undefined {
  const dirs = [...(process.env["PATH"] ?? "").split(delimiter).filter((d) => d !== ""), ...extraBinDirs];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export interface PostgresBinaries {
  initdb: string;
  pgCtl: string;
  postgres: string;
}

/**
 * The folder holding initdb, pg_ctl and postgres together: `pg_config --bindir`, then the newest
 * /usr/lib/postgresql/<version>/bin, then PATH. Undefined when none has all three.
 */
export function findPostgresBinaries(): PostgresBinaries | undefined {
  const dirs: string[] = [];
  const pgConfig = findBinary("pg_config");
  if (pgConfig !== undefined) {
    const out = spawnSync(pgConfig, ["--bindir"], { encoding: "utf8", timeout: 5_000 });
    if (out.status === 0 && out.stdout.trim() !== "") dirs.push(out.stdout.trim());
  }
  const debianRoot = "/usr/lib/postgresql";
  if (existsSync(debianRoot)) {
    const versions = spawnSync("ls", [debianRoot], { encoding: "utf8", timeout: 5_000 })
      .stdout.split("\n")
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) dirs.push(join(debianRoot, v, "bin"));
  }
  for (const dir of dirs) {
    const bins = { initdb: join(dir, "initdb"), pgCtl: join(dir, "pg_ctl"), postgres: join(dir, "postgres") };
    if (isExecutable(bins.initdb) && isExecutable(bins.pgCtl) && isExecutable(bins.postgres)) return bins;
  }
  const initdb = findBinary("initdb");
  const pgCtl = findBinary("pg_ctl");
  const pg = findBinary("postgres");
  if (initdb !== undefined && pgCtl !== undefined && pg !== undefined) return { initdb, pgCtl, postgres: pg };
  return undefined;
}

export function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

export interface UnixUser {
  name: string;
  uid: number;
  gid: number;
  groups: number[];
}

export function lookupUser(name: string): UnixUser | undefined {
  const id = (flag: string): string | undefined => {
    const out = spawnSync("id", [flag, name], { encoding: "utf8", timeout: 5_000 });
    return out.status === 0 ? out.stdout.trim() : undefined;
  };
  const uid = id("-u");
  const gid = id("-g");
  const groups = id("-G");
  if (uid === undefined || gid === undefined) return undefined;
  return {
    name,
    uid: Number(uid),
    gid: Number(gid),
    groups: (groups ?? "")
      .split(/\s+/)
      .filter((g) => g !== "")
      .map(Number),
  };
}

/**
 * The first ancestor of `path` (itself excluded) that `user` cannot traverse (no execute permission for it),
 * or undefined when every ancestor is traversable. A PostgreSQL running as `postgres` must reach its data
 * folder through every parent: /root, for one, is 0700 on most machines.
 */
export function firstUntraversableAncestor(path: string, user: UnixUser): string | undefined {
  let dir = dirname(resolve(path));
  const chain: string[] = [];
  for (;;) {
    chain.unshift(dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const d of chain) {
    if (!existsSync(d)) continue;
    const st = statSync(d);
    const mode = st.mode;
    const can = st.uid === user.uid ? (mode & 0o100) !== 0 : user.groups.includes(st.gid) || st.gid === user.gid ? (mode & 0o010) !== 0 : (mode & 0o001) !== 0;
    if (!can) return d;
  }
  return undefined;
}

/** Runs a command to completion (bounded), as `asUser` via runuser when given; rejects with its output on failure. */
export async function run(cmd: string, args: string[], opts: { asUser?: string | undefined; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<string> {
  const [file, argv] = opts.asUser !== undefined ? ["runuser", ["-u", opts.asUser, "--", cmd, ...args]] : [cmd, args];
  return new Promise((resolveRun, reject) => {
    // cwd "/" so a child running as another user never fails on an unreadable working directory.
    const child = spawn(file, argv, { cwd: "/", env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (b: Buffer) => (output += b.toString()));
    child.stderr.on("data", (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolveRun(output);
      else reject(new Error(`${[file, ...argv].join(" ")} failed (${signal ?? `exit ${code}`}):\n${output.trim()}`));
    });
  });
}

export function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
