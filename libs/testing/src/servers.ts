// Starts real PostgreSQL, NATS (JetStream) and Redis servers from the machine's own binaries. Used by the
// test harness (private servers per test run) and by the dev stack (`npm start`). Nothing here is a stand-in:
// these are the same servers production talks to, only private, on their own ports and data folders.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, chmodSync, chownSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import postgres from "postgres";

/** A server this process started; `stop()` is idempotent. */
export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

export interface PostgresServer extends RunningServer {
  /** Superuser URL of the `postgres` database on this server. */
  url: string;
  port: number;
  dataDir: string;
  logFile: string;
}

export interface NatsServer extends RunningServer {
  port: number;
  pid: number | undefined;
}

export interface RedisServer extends RunningServer {
  port: number;
  pid: number | undefined;
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

const serverStartTimeoutMs = 60_000;
const serverStopTimeoutMs = 15_000;
const pollIntervalMs = 100;
/** Directories searched after PATH: sbin folders are often missing from a non-root PATH. */
const extraBinDirs = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

// ---------------------------------------------------------------------------------------------------------
// small helpers

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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
async function run(cmd: string, args: string[], opts: { asUser?: string | undefined; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<string> {
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

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Waits (bounded) until a superuser can run `select 1` on the server. */
async function waitForPostgres(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`select 1`;
      return;
    } catch (err) {
      lastError = err;
    } finally {
      await sql.end({ timeout: 1 });
    }
    await sleep(pollIntervalMs * 2);
  }
  throw new Error(`PostgreSQL at ${url} did not accept connections within ${timeoutMs} ms: ${String(lastError)}`);
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL

export interface StartPostgresOptions {
  /** Data folder; an already initialised one (has PG_VERSION) is reused as it is. */
  dataDir: string;
  port: number;
  /** Unix socket folder of this server (default: `<dataDir>-socket`); never the system's /var/run/postgresql. */
  socketDir?: string;
  /** Sized for every pool that will connect, plus headroom for admin sessions. */
  maxConnections: number;
  /** false for throwaway test clusters: much faster, and a crash only loses test data. */
  fsync: boolean;
  /** Server log (default `<dataDir>/server.log`: inside the data folder, so the postgres user can write it). */
  logFile?: string;
  /**
   * The superuser's password. Given, every connection (socket and TCP) authenticates with scram-sha-256, and the
   * returned URL carries the password. Without it, every connection is trusted: only for throwaway test clusters,
   * whose services connect as roles without passwords.
   */
  superuserPassword?: string;
}

/** The pg_hba.conf of a cluster with passwords: no connection is trusted, whoever the local user is. */
function scramHba(): string {
  return [
    "# Written on every start: every connection authenticates with a password (scram-sha-256).",
    "local all all scram-sha-256",
    "host all all 127.0.0.1/32 scram-sha-256",
    "host all all ::1/128 scram-sha-256",
    "",
  ].join("\n");
}

/** A password as an SQL string literal. */
function sqlLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * Starts a private PostgreSQL (initdb on first use) listening on 127.0.0.1:<port>, and waits until it accepts
 * connections. With `superuserPassword` every connection authenticates with scram-sha-256; without it, local and
 * loopback connections are trusted. As root, initdb and postgres run as the `postgres` user (PostgreSQL refuses to
 * run as root), so the data and socket folders are handed to that user and every parent folder must be traversable
 * by it. Both folders are 0700: the socket folder is the server's own, not a door for every local user.
 */
export async function startPostgres(opts: StartPostgresOptions): Promise<PostgresServer> {
  const bins = findPostgresBinaries();
  if (bins === undefined) throw new MissingBinaryError(INSTALL_HINT.postgres);
  const dataDir = resolve(opts.dataDir);
  const socketDir = resolve(opts.socketDir ?? `${dataDir}-socket`);
  const logFile = resolve(opts.logFile ?? join(dataDir, "server.log"));

  let asUser: string | undefined;
  if (isRoot()) {
    const pgUser = lookupUser("postgres");
    if (pgUser === undefined) {
      throw new MissingBinaryError(
        `Running as root, PostgreSQL must run as the 'postgres' user, which does not exist. Install the server package (it creates the user): \`apt-get install postgresql\`.`,
      );
    }
    if (findBinary("runuser") === undefined) throw new MissingBinaryError("runuser not found (package util-linux): `apt-get install util-linux`.");
    for (const dir of [dataDir, socketDir]) {
      const blocked = firstUntraversableAncestor(dir, pgUser);
      if (blocked !== undefined) {
        throw new Error(
          `The postgres user cannot reach ${dir}: ${blocked} is not traversable by it (mode ${(statSync(blocked).mode & 0o777).toString(8)}). Put the data folder elsewhere or \`chmod o+x ${blocked}\`.`,
        );
      }
    }
    asUser = pgUser.name;
    for (const dir of [dataDir, socketDir]) {
      mkdirSync(dir, { recursive: true });
      chownSync(dir, pgUser.uid, pgUser.gid);
    }
  } else {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  }
  chmodSync(dataDir, 0o700);
  chmodSync(socketDir, 0o700);
  const owner = asUser === undefined ? undefined : lookupUser(asUser);

  const created = !existsSync(join(dataDir, "PG_VERSION"));
  if (created) await initCluster(bins, dataDir, socketDir, owner, opts.superuserPassword);

  // A server left running on this data folder (a previous run killed with -9) is stopped, so the settings
  // below (port, max_connections) are the ones in force.
  const status = spawnSync(
    asUser !== undefined ? "runuser" : bins.pgCtl,
    asUser !== undefined ? ["-u", asUser, "--", bins.pgCtl, "status", "-D", dataDir] : ["status", "-D", dataDir],
    {
      cwd: "/",
      timeout: 10_000,
    },
  );
  if (status.status === 0) await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "fast", "-w", "-t", "30"], { asUser, timeoutMs: 40_000 });
  if (opts.superuserPassword !== undefined) {
    // An existing cluster gets the password again on each start, while it is stopped (single-user mode): one made
    // before it had a password, or whose password file was made anew, takes the current one, and is never up
    // while it still trusts anyone.
    if (!created) setSuperuserPassword(bins, dataDir, asUser, opts.superuserPassword);
    writeOwned(join(dataDir, "pg_hba.conf"), scramHba(), owner);
  }

  const settings: Record<string, string> = {
    port: String(opts.port),
    listen_addresses: "127.0.0.1",
    unix_socket_directories: socketDir,
    max_connections: String(opts.maxConnections),
    fsync: opts.fsync ? "on" : "off",
    // Without fsync these cost durability that is already gone; they only slow a throwaway cluster down.
    synchronous_commit: opts.fsync ? "on" : "off",
    full_page_writes: opts.fsync ? "on" : "off",
    // Drops held by a dead test file (or a crashed service) should not wait forever on a lock.
    idle_in_transaction_session_timeout: "300000",
    // The scram-sha-256 lines of pg_hba.conf accept only passwords stored as scram verifiers.
    password_encryption: "scram-sha-256",
  };
  // pg_ctl hands -o to a shell; every value is single-quoted.
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}='${v.replace(/'/g, `'\\''`)}'`)
    .join(" ");
  try {
    await run(bins.pgCtl, ["start", "-D", dataDir, "-l", logFile, "-w", "-t", String(serverStartTimeoutMs / 1000), "-o", serverOptions], {
      asUser,
      timeoutMs: serverStartTimeoutMs + 10_000,
    });
  } catch (err) {
    const inUse = (await portAcceptsConnections(opts.port)) ? ` Port ${opts.port} is already in use by another process.` : "";
    throw new Error(`PostgreSQL did not start.${inUse}\n${(err as Error).message}\n--- ${logFile} ---\n${tail(logFile)}`, { cause: err });
  }

  const url = postgresUrl(opts.port, opts.superuserPassword);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "fast", "-w", "-t", String(serverStopTimeoutMs / 1000)], {
      asUser,
      timeoutMs: serverStopTimeoutMs + 5_000,
    }).catch(async () => {
      await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-w", "-t", "10"], { asUser, timeoutMs: 15_000 });
    });
  };
  try {
    await waitForPostgres(url, serverStartTimeoutMs);
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return { url, port: opts.port, dataDir, logFile, stop };
}

function postgresUrl(port: number, password: string | undefined): string {
  const url = new URL(`postgres://postgres@127.0.0.1:${port}/postgres`);
  if (password !== undefined) url.password = encodeURIComponent(password);
  return url.toString();
}

/** Writes a file readable by its owner only, owned by `owner` when given (the postgres user, as root). */
function writeOwned(file: string, content: string, owner: UnixUser | undefined): void {
  writeFileSync(file, content, { mode: 0o600 });
  chmodSync(file, 0o600);
  if (owner !== undefined) chownSync(file, owner.uid, owner.gid);
}

/**
 * initdb with the superuser `postgres`, the same name whoever runs it, so URLs do not depend on it. With a password
 * the cluster authenticates every connection with scram-sha-256 from its first start; initdb reads the password
 * from a file (never the command line), written for the moment into the server's own 0700 socket folder.
 */
async function initCluster(
  bins: PostgresBinaries,
  dataDir: string,
  socketDir: string,
  owner: UnixUser | undefined,
  password: string | undefined,
): Promise<void> {
  const args = ["-D", dataDir, "-U", "postgres", "--encoding=UTF8", "--no-locale", "--no-instructions"];
  const pwFile = join(socketDir, "initdb-password");
  if (password === undefined) args.push("--auth=trust");
  else {
    writeOwned(pwFile, `${password}\n`, owner);
    args.push("--auth=scram-sha-256", `--pwfile=${pwFile}`);
  }
  try {
    await run(bins.initdb, args, { asUser: owner?.name, timeoutMs: 120_000, env: { ...process.env, LC_ALL: "C", LANG: "C" } });
  } finally {
    rmSync(pwFile, { force: true });
  }
}

/** Sets the superuser's password through a single-user backend (the server stopped); the password goes on stdin. */
function setSuperuserPassword(bins: PostgresBinaries, dataDir: string, asUser: string | undefined, password: string): void {
  const statement = `alter role postgres password ${sqlLiteral(password)}\n`;
  const [file, argv] = asUser !== undefined ? ["runuser", ["-u", asUser, "--", bins.postgres]] : [bins.postgres, []];
  const out = spawnSync(file, [...argv, "--single", "-D", dataDir, "-c", "password_encryption=scram-sha-256", "postgres"], {
    cwd: "/",
    input: statement,
    encoding: "utf8",
    timeout: 60_000,
  });
  if (out.status !== 0 || /ERROR|FATAL/.test(out.stdout + out.stderr)) {
    throw new Error(`could not set the PostgreSQL superuser's password (exit ${out.status ?? out.signal}):\n${(out.stdout + out.stderr).trim()}`);
  }
}

/**
 * Stops a private PostgreSQL synchronously (immediate mode) from an `exit` handler, where nothing async
 * runs any more: an interrupted test run must not leave a postmaster behind.
 */
export function stopPostgresSync(dataDir: string): void {
  const bins = findPostgresBinaries();
  if (bins === undefined || !existsSync(join(dataDir, "postmaster.pid"))) return;
  const args = ["stop", "-D", dataDir, "-m", "immediate", "-w", "-t", "10"];
  if (isRoot()) spawnSync("runuser", ["-u", "postgres", "--", bins.pgCtl, ...args], { cwd: "/", timeout: 15_000, stdio: "ignore" });
  else spawnSync(bins.pgCtl, args, { cwd: "/", timeout: 15_000, stdio: "ignore" });
}

// ---------------------------------------------------------------------------------------------------------
// Child-process servers (NATS, Redis)

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
}

/** Starts `nats-server -js` on 127.0.0.1:<port> with its JetStream store in `storeDir`. */
export async function startNats(opts: StartNatsOptions): Promise<NatsServer> {
  const binary = findBinary("nats-server");
  if (binary === undefined) throw new MissingBinaryError(INSTALL_HINT.nats);
  const storeDir = resolve(opts.storeDir);
  mkdirSync(storeDir, { recursive: true });
  const args = [...(opts.configFile !== undefined ? ["-c", resolve(opts.configFile)] : []), "-js", "-a", "127.0.0.1", "-p", String(opts.port), "-sd", storeDir];
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
