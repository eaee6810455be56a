// A private PostgreSQL from the machine's binaries: initdb on first use, pg_ctl start and stop, passwords.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import postgres from "postgres";
import {
  findBinary,
  findPostgresBinaries,
  firstUntraversableAncestor,
  INSTALL_HINT,
  isRoot,
  lookupUser,
  MissingBinaryError,
  pollIntervalMs,
  portAcceptsConnections,
  run,
  serverStartTimeoutMs,
  serverStopTimeoutMs,
  sleep,
  tail,
  type PostgresBinaries,
  type RunningServer,
  type UnixUser,
} from "./host.ts";

export interface PostgresServer extends RunningServer {
  /** Superuser URL of the `postgres` database on this server. */
  url: string;
  port: number;
  dataDir: string;
  logFile: string;
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

/** Who runs the cluster: as root, the `postgres` user (PostgreSQL refuses to run as root); otherwise whoever runs this. */
interface ClusterUser {
  /** The user initdb, pg_ctl and postgres run as (through runuser), when not this process's own. */
  asUser: string | undefined;
  owner: UnixUser | undefined;
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
  const { asUser, owner } = prepareClusterDirs(dataDir, socketDir);

  const created = !existsSync(join(dataDir, "PG_VERSION"));
  if (created) await initCluster(bins, dataDir, socketDir, owner, opts.superuserPassword);
  await stopLeftoverCluster(bins, dataDir, asUser);
  if (opts.superuserPassword !== undefined) {
    // An existing cluster gets the password again on each start, while it is stopped (single-user mode): one made
    // before it had a password, or whose password file was made anew, takes the current one, and is never up
    // while it still trusts anyone.
    if (!created) setSuperuserPassword(bins, dataDir, asUser, opts.superuserPassword);
    writeOwned(join(dataDir, "pg_hba.conf"), scramHba(), owner);
  }

  try {
    await run(bins.pgCtl, ["start", "-D", dataDir, "-l", logFile, "-w", "-t", String(serverStartTimeoutMs / 1000), "-o", serverOptions(opts, socketDir)], {
      asUser,
      timeoutMs: serverStartTimeoutMs + 10_000,
    });
  } catch (err) {
    const inUse = (await portAcceptsConnections(opts.port)) ? ` Port ${opts.port} is already in use by another process.` : "";
    throw new Error(`PostgreSQL did not start.${inUse}\n${(err as Error).message}\n--- ${logFile} ---\n${tail(logFile)}`, { cause: err });
  }

  const url = postgresUrl(opts.port, opts.superuserPassword);
  const stop = clusterStopper(bins, dataDir, asUser);
  try {
    await waitForPostgres(url, serverStartTimeoutMs);
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return { url, port: opts.port, dataDir, logFile, stop };
}

/**
 * Makes the data and socket folders (0700). As root they are handed to the `postgres` user, which must be able to
 * traverse every parent folder.
 */
function prepareClusterDirs(dataDir: string, socketDir: string): ClusterUser {
  let cluster: ClusterUser = { asUser: undefined, owner: undefined };
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
    for (const dir of [dataDir, socketDir]) {
      mkdirSync(dir, { recursive: true });
      chownSync(dir, pgUser.uid, pgUser.gid);
    }
    cluster = { asUser: pgUser.name, owner: lookupUser(pgUser.name) };
  } else {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  }
  chmodSync(dataDir, 0o700);
  chmodSync(socketDir, 0o700);
  return cluster;
}

/**
 * A server left running on this data folder (a previous run killed with -9) is stopped, so the settings of this
 * start (port, max_connections) are the ones in force.
 */
async function stopLeftoverCluster(bins: PostgresBinaries, dataDir: string, asUser: string | undefined): Promise<void> {
  const status = spawnSync(
    asUser !== undefined ? "runuser" : bins.pgCtl,
    asUser !== undefined ? ["-u", asUser, "--", bins.pgCtl, "status", "-D", dataDir] : ["status", "-D", dataDir],
    {
      cwd: "/",
      timeout: 10_000,
    },
  );
  if (status.status === 0) await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "fast", "-w", "-t", "30"], { asUser, timeoutMs: 40_000 });
}

/** The server's settings as pg_ctl's `-o`, which goes to a shell: every value is single-quoted. */
function serverOptions(opts: StartPostgresOptions, socketDir: string): string {
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
  return Object.entries(settings)
    .map(([k, v]) => `-c ${k}='${v.replace(/'/g, `'\\''`)}'`)
    .join(" ");
}

/** The server's idempotent stop: fast shutdown, immediate when that fails. */
function clusterStopper(bins: PostgresBinaries, dataDir: string, asUser: string | undefined): () => Promise<void> {
  let stopped = false;
  return async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "fast", "-w", "-t", String(serverStopTimeoutMs / 1000)], {
      asUser,
      timeoutMs: serverStopTimeoutMs + 5_000,
    }).catch(async () => {
      await run(bins.pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-w", "-t", "10"], { asUser, timeoutMs: 15_000 });
    });
  };
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
