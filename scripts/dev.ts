// `npm start`: the whole system on one machine.
//   1. PostgreSQL and NATS JetStream: DATABASE_URL (admin URL) / NATS_URL when set, else private servers from the
//      machine's binaries with their data under .data/ (DEV_DATA_DIR, 0700; kept between starts), on their own ports.
//      The private PostgreSQL trusts no one: every connection authenticates with scram-sha-256 (superuser password
//      generated into .data/db-superuser-password.json).
//   2. Migrations for every service.
//   3. A sandbox org and test key on first start (.data/dev-credentials.json), reused afterwards. Each service's
//      NATS password and database role password are generated on first start into the data folder (readable by
//      its owner only) and reused; the private nats-server gets the authorization of the permission matrix (ADR 0011).
//   4. Every service as its own child process, output prefixed with its name; waits until all are ready.
// Ctrl-C / SIGTERM stops the services, then the servers it started. A service that dies is restarted (backoff).
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { NATS_ADMIN_USER, NATS_IDENTITIES, natsConfigString, natsServerAuthorization, natsUsers, SERVICES, type ServiceName } from "@treasury/contracts";
import { NATS_MIGRATIONS_USER } from "@treasury/contracts";
import { generateKeyRingEntry, migrateAll, migrateEventsStream, serviceDatabaseUrl } from "@treasury/service-kit";
import {
  MissingBinaryError,
  findBinary,
  findPostgresBinaries,
  firstUntraversableAncestor,
  INSTALL_HINT,
  isRoot,
  lookupUser,
  portAcceptsConnections,
  startNats,
  startPostgres,
  type RunningServer,
} from "@treasury/testing/servers";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const dataRoot = env["DEV_DATA_DIR"] ? resolve(env["DEV_DATA_DIR"]) : join(root, ".data");
const credentialsFile = join(dataRoot, "dev-credentials.json");
const pidsFile = join(dataRoot, "dev-services.json");
/** Generated secrets, one JSON object per kind: each NATS identity's password, each service role's password. */
const natsPasswordsFile = join(dataRoot, "nats-passwords.json");
const rolePasswordsFile = join(dataRoot, "db-role-passwords.json");
/** The private PostgreSQL's superuser password: every connection to it authenticates with scram-sha-256. */
const superuserPasswordFile = join(dataRoot, "db-superuser-password.json");
/**
 * Key rings that seal secrets at rest, generated on first start into the data folder (readable by its owner
 * only) and reused afterwards; a value set in the environment wins. Each service gets the rings it uses.
 */
const KEY_RINGS: { service: ServiceName; variable: string; file: string; what: string }[] = [
  { service: "kyc", variable: "PII_KEYS", file: "pii-keys", what: "personal data" },
  { service: "payouts", variable: "PII_KEYS", file: "payouts-pii-keys", what: "bank account numbers" },
  { service: "receipts", variable: "RECEIPTS_SEALING_KEYS", file: "receipts-sealing-keys", what: "receipt signing keys" },
  { service: "webhooks", variable: "WEBHOOK_SECRET_KEYS", file: "webhook-secret-keys", what: "webhook signing secrets" },
];

const pgPort = Number(env["DEV_PG_PORT"] ?? 54329);
const natsPort = Number(env["DEV_NATS_PORT"] ?? 42229);
const mainPort = env["PORT"] ?? "8080";
const altPort = env["ALT_PORT"] ?? "8081";
const host = env["HOST"] ?? "127.0.0.1";
const dbPoolMax = Number(env["DB_POOL_MAX"] ?? 10);
/**
 * Every service process's pool and its outbox relay's own connection, plus headroom for migrations, this script,
 * psql sessions and LISTEN connections.
 */
const maxConnections = SERVICES.length * (dbPoolMax + 1) + 40;
const readyTimeoutMs = Number(env["DEV_READY_TIMEOUT_MS"] ?? 120_000);
const stopTimeoutMs = Number(env["DEV_STOP_TIMEOUT_MS"] ?? 10_000);
const readyPollIntervalMs = 250;
/** Restart backoff of a crashed service (see restartLater). */
const restartBackoffMaxMs = 30_000;
const restartResetAfterMs = 60_000;

/** Each service's /healthz, /readyz and /metrics port: DEV_HEALTH_PORT_BASE (9100) plus its offset. */
const healthPortBase = Number(env["DEV_HEALTH_PORT_BASE"] ?? 9100);
const HEALTH_PORT_OFFSETS: Record<ServiceName, number> = { gateway: 0, ledger: 1, payments: 2, payouts: 3, refunds: 4, receipts: 5, kyc: 6, webhooks: 7 };
const HEALTH_PORTS = Object.fromEntries(SERVICES.map((s) => [s, healthPortBase + HEALTH_PORT_OFFSETS[s]])) as Record<ServiceName, number>;

const tty = process.stdout.isTTY === true;
const COLORS = [36, 33, 32, 35, 34, 96, 93, 92, 95];
const paint = (code: number, text: string): string => (tty ? `\u001b[${code}m${text}\u001b[0m` : text);
const bold = (text: string): string => (tty ? `\u001b[1m${text}\u001b[22m` : text);
const say = (msg: string): void => console.log(`${paint(90, "[dev]")} ${msg}`);
const shout = (msg: string): void => console.error(`\n${paint(41, paint(97, ` ${msg} `))}\n`);

interface Child {
  name: ServiceName;
  proc: ChildProcess;
  exited: Promise<void>;
  hasExited: boolean;
}

const children: Child[] = [];
const infra: { name: string; server: RunningServer }[] = [];
let shuttingDown = false;

// -------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  // The data folder holds the stack's secrets and databases: its owner's alone, also when it existed before.
  mkdirSync(dataRoot, { recursive: true, mode: 0o700 });
  chmodSync(dataRoot, 0o700);
  checkBinaries();
  await stopLeftoverServices();
  await checkPortsFree();

  const adminUrl = env["DATABASE_URL"] !== undefined && env["DATABASE_URL"] !== "" ? env["DATABASE_URL"] : await startPrivatePostgres();
  // A NATS the caller names runs its own authorization; the private one runs the permission matrix's.
  const natsPasswords = (env["NATS_URL"] ?? "") === "" ? ensureSecrets(natsPasswordsFile, NATS_IDENTITIES, "NATS passwords") : undefined;
  const natsUrl = env["NATS_URL"] !== undefined && env["NATS_URL"] !== "" ? env["NATS_URL"] : await startPrivateNats(natsPasswords ?? {});
  if (shuttingDown) return;

  say("running migrations");
  const rolePasswords = ensureSecrets(rolePasswordsFile, SERVICES, "database role passwords");
  await migrateAll({ adminUrl, rootDir: root, services: [...SERVICES], rolePasswords, log: (m) => say(`migrate: ${m}`) });
  // The EVENTS stream, as the migrate step makes it: as the `migrations` identity, the only one allowed to (ADR 0011).
  const migrationsPassword = natsPasswords?.[NATS_MIGRATIONS_USER];
  await migrateEventsStream(
    { url: natsUrl, name: "dev-migrate", ...(migrationsPassword !== undefined ? { user: NATS_MIGRATIONS_USER, password: migrationsPassword } : {}) },
    env["NATS_PREFIX"] ?? "",
  );
  const credentials = await ensureCredentials(adminUrl);
  // The admin CLI (`npm run -s admin -- …`) finds the dev database here when DATABASE_URL is not set, and NATS as
  // its own identity (the credentials in the URL), so this file is readable by its owner only.
  const adminNatsUrl = natsPasswords === undefined ? natsUrl : withCredentials(natsUrl, NATS_ADMIN_USER, natsPasswords[NATS_ADMIN_USER] ?? "");
  writeFileSync(join(dataRoot, "dev-stack.json"), JSON.stringify({ database_url: adminUrl, nats_url: adminNatsUrl }, null, 2), { mode: 0o600 });
  chmodSync(join(dataRoot, "dev-stack.json"), 0o600);
  if (shuttingDown) return;

  for (const [i, name] of SERVICES.entries())
    startService(name, i, serviceEnv(name, { adminUrl, natsUrl, rolePassword: rolePasswords[name], natsPassword: natsPasswords?.[name] }));
  writePids();
  await waitUntilReady();
  if (shuttingDown) return;

  const base = `http://${host}:${mainPort}`;
  const alt = env["ALT_BASE_URL"] ?? `http://${host}:${altPort}`;
  console.log(
    [
      "",
      bold(`Treasury is up (${SERVICES.length} services).`),
      `  API base URL : ${base}`,
      `  Alt URL      : ${alt}   (hosted checkout / wallet / receipt pages)`,
      `  Org          : ${credentials.org_id} (sandbox)`,
      `  Test API key : ${credentials.test_api_key}`,
      `  Try          : curl -s ${base}/v1/health-check`,
      `  PostgreSQL   : ${redactPassword(adminUrl)}   NATS: ${natsUrl}`,
      `  Credentials  : ${credentialsFile}`,
      "  Ctrl-C stops everything.",
      "",
    ].join("\n"),
  );
}

function checkBinaries(): void {
  const missing: string[] = [];
  if ((env["DATABASE_URL"] ?? "") === "" && findPostgresBinaries() === undefined) missing.push(INSTALL_HINT.postgres);
  if ((env["NATS_URL"] ?? "") === "" && findBinary("nats-server") === undefined) missing.push(INSTALL_HINT.nats);
  if (missing.length > 0) throw new MissingBinaryError(missing.join("\n"));
}

async function checkPortsFree(): Promise<void> {
  const ports: [string, number][] = [
    ["gateway PORT", Number(mainPort)],
    ["gateway ALT_PORT", Number(altPort)],
    ...SERVICES.map((s): [string, number] => [`${s} health port`, HEALTH_PORTS[s]]),
  ];
  const busy: string[] = [];
  for (const [what, port] of ports) if (await portAcceptsConnections(port, host)) busy.push(`${port} (${what})`);
  if (busy.length > 0) {
    throw new Error(`ports already in use: ${busy.join(", ")}. Is another \`npm start\` running? Stop it, or set PORT / ALT_PORT.`);
  }
}

/**
 * The private PostgreSQL keeps its data in .data/pg. As root it runs as the `postgres` user, which must be able
 * to traverse every parent folder; when it cannot (a checkout under /root, say, or the 0700 data folder itself),
 * the data goes under /var/tmp. Every connection authenticates with scram-sha-256: the superuser with a password
 * generated into the data folder, the services' roles with theirs (migrations set them).
 */
async function startPrivatePostgres(): Promise<string> {
  let dataDir = join(dataRoot, "pg");
  let socketDir = join(dataRoot, "pg-socket");
  if (isRoot()) {
    const pgUser = lookupUser("postgres");
    const blocked = pgUser === undefined ? undefined : firstUntraversableAncestor(dataDir, pgUser);
    if (blocked !== undefined) {
      const elsewhere = join(
        "/var/tmp",
        `treasury-dev-${createHash("sha256")
          .update(env["DEV_DATA_DIR"] ? dataRoot : root)
          .digest("hex")
          .slice(0, 8)}`,
      );
      mkdirSync(elsewhere, { recursive: true });
      chmodSync(elsewhere, 0o755);
      dataDir = join(elsewhere, "pg");
      socketDir = join(elsewhere, "pg-socket");
      say(`the postgres user cannot traverse ${blocked}, so PostgreSQL data lives in ${dataDir} instead of .data/pg`);
    }
  }
  const firstTime = !existsSync(join(dataDir, "PG_VERSION"));
  say(`${firstTime ? "initialising" : "starting"} PostgreSQL in ${dataDir} on 127.0.0.1:${pgPort}`);
  const superuserPassword = ensureSecrets(superuserPasswordFile, ["postgres"], "the PostgreSQL superuser password")["postgres"];
  if (superuserPassword === undefined) throw new Error(`no superuser password in ${superuserPasswordFile}`);
  const pg = await startPostgres({ dataDir, socketDir, port: pgPort, maxConnections, fsync: true, superuserPassword });
  infra.unshift({ name: "PostgreSQL", server: pg });
  say(`PostgreSQL ready (max_connections ${maxConnections}, log ${pg.logFile})`);
  return pg.url;
}

/**
 * The private nats-server runs with the permission matrix (ADR 0011), rendered afresh on every start from the
 * passwords of the data folder: a change of the matrix takes effect with the next start.
 */
async function startPrivateNats(passwords: Record<string, string>): Promise<string> {
  const configFile = join(dataRoot, "nats.conf");
  const users = natsUsers((identity) => natsConfigString(passwords[identity] ?? ""), { prefix: env["NATS_PREFIX"] ?? "" });
  writeFileSync(configFile, natsServerAuthorization(users), { mode: 0o600 });
  chmodSync(configFile, 0o600);
  say(`starting nats-server -js on 127.0.0.1:${natsPort} (store ${join(dataRoot, "nats")}, authorization ${configFile})`);
  const nats = await startNats({
    configFile,
    storeDir: join(dataRoot, "nats"),
    port: natsPort,
    logFile: join(dataRoot, "nats.log"),
    pidFile: join(dataRoot, "nats.pid"),
    // Own process group: a terminal Ctrl-C reaches only this script, which stops NATS after the services.
    detached: true,
  });
  infra.unshift({ name: "NATS", server: nats });
  return nats.url;
}

interface Credentials {
  org_id: string;
  test_api_key: string;
}

/** Reuses .data/dev-credentials.json while its org exists in this database; otherwise creates an org and key. */
async function ensureCredentials(adminUrl: string): Promise<Credentials> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    if (existsSync(credentialsFile)) {
      const saved = JSON.parse(readFileSync(credentialsFile, "utf8")) as Partial<Credentials>;
      if (typeof saved.org_id === "string" && typeof saved.test_api_key === "string") {
        const rows = await sql`select 1 from gateway.orgs where id = ${saved.org_id}`.catch(() => []);
        if (rows.length > 0) {
          say(`reusing org ${saved.org_id} and its test key from ${credentialsFile}`);
          return { org_id: saved.org_id, test_api_key: saved.test_api_key };
        }
        say(`${credentialsFile} names an org this database does not have; creating a new one`);
      }
    }
    // The gateway owns orgs and keys; its admin functions are the one way to create them.
    const admin = await import("../services/gateway/src/admin.ts");
    const { org_id } = await admin.createOrg(sql, { name: "Dev Sandbox" });
    const { api_key } = await admin.createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });
    const credentials: Credentials = { org_id, test_api_key: api_key };
    writeFileSync(credentialsFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    say(bold(`created sandbox org ${org_id} and test key ${api_key} (saved to ${credentialsFile})`));
    return credentials;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Reuses the generated secrets of a data folder file, adding one for each name it lacks; the file is readable by its
 * owner only. Letters and digits: they go into URLs and configuration files unescaped.
 */
function ensureSecrets(file: string, names: readonly string[], what: string): Record<string, string> {
  const saved = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, string>) : {};
  const missing = names.filter((n) => typeof saved[n] !== "string" || saved[n] === "");
  if (missing.length > 0) {
    for (const n of missing) saved[n] = randomBytes(24).toString("hex");
    writeFileSync(file, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
    say(`generated ${what} for ${missing.join(", ")} (${file})`);
  }
  chmodSync(file, 0o600);
  return saved;
}

function withCredentials(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return u.toString().replace(/\/$/, "");
}

interface ServiceSecrets {
  adminUrl: string;
  natsUrl: string;
  rolePassword: string | undefined;
  /** Undefined when NATS is the caller's (NATS_URL): then its own configuration decides. */
  natsPassword: string | undefined;
}

function serviceEnv(name: ServiceName, s: ServiceSecrets): NodeJS.ProcessEnv {
  const vars: NodeJS.ProcessEnv = {
    ...env,
    DATABASE_URL: serviceDatabaseUrl(s.adminUrl, name, s.rolePassword),
    NATS_URL: s.natsUrl,
    ...(s.natsPassword !== undefined ? { NATS_USER: name, NATS_PASSWORD: s.natsPassword } : {}),
    NATS_PREFIX: env["NATS_PREFIX"] ?? "",
    HEALTH_HOST: "127.0.0.1",
    HEALTH_PORT: String(HEALTH_PORTS[name]),
    LOG_LEVEL: env["LOG_LEVEL"] ?? "info",
    DB_POOL_MAX: String(dbPoolMax),
  };
  for (const ring of KEY_RINGS) {
    if (ring.service === name && (env[ring.variable] ?? "") === "") vars[ring.variable] = ensureKeyRing(ring.file, ring.what);
  }
  if (name === "payments" && (env["STRIPE_WEBHOOK_SECRET"] ?? "") === "") vars["STRIPE_WEBHOOK_SECRET"] = ensureStripeWebhookSecret();
  // On a developer's machine the receiver of sandbox webhooks usually runs on the same machine.
  if (name === "webhooks") vars["WEBHOOK_ALLOW_PRIVATE_URLS"] = env["WEBHOOK_ALLOW_PRIVATE_URLS"] ?? "true";
  if (name === "gateway") {
    vars["PORT"] = mainPort;
    vars["ALT_PORT"] = altPort;
    vars["HOST"] = host;
    vars["ALT_BASE_URL"] = env["ALT_BASE_URL"] ?? `http://${host}:${altPort}`;
  }
  return vars;
}

/**
 * The card processor's webhook endpoint secret of the dev stack, kept in dev-credentials.json as
 * `stripe_webhook_secret` (created on first start): a developer signs test events with it (README, "Live card
 * payments") to drive live completion without a processor account.
 */
function ensureStripeWebhookSecret(): string {
  const saved = JSON.parse(readFileSync(credentialsFile, "utf8")) as Record<string, unknown>;
  if (typeof saved["stripe_webhook_secret"] === "string") return saved["stripe_webhook_secret"];
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  writeFileSync(credentialsFile, `${JSON.stringify({ ...saved, stripe_webhook_secret: secret }, null, 2)}\n`, { mode: 0o600 });
  say(`generated the processor webhook secret (stripe_webhook_secret in ${credentialsFile})`);
  return secret;
}

/** Reuses a key ring of the data folder, or creates one (readable by its owner only) on first start. */
function ensureKeyRing(name: string, what: string): string {
  const file = join(dataRoot, name);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const ring = generateKeyRingEntry("dev1");
  writeFileSync(file, `${ring}\n`, { mode: 0o600 });
  say(`generated the key that seals ${what} (${file})`);
  return ring;
}

function startService(name: ServiceName, index: number, vars: NodeJS.ProcessEnv): void {
  const label = paint(COLORS[index % COLORS.length] ?? 36, `[${name}]`.padEnd(Math.max(...SERVICES.map((s) => s.length)) + 2));
  const proc = spawn(process.execPath, ["--import", "tsx", join(root, "services", name, "src", "main.ts")], {
    cwd: root,
    env: vars,
    stdio: ["ignore", "pipe", "pipe"],
    // Own process group: Ctrl-C reaches only this script, which stops the services in order.
    detached: true,
  });
  const child: Child = { name, proc, hasExited: false, exited: Promise.resolve() };
  const startedAt = Date.now();
  child.exited = new Promise((resolveExit) => {
    proc.once("exit", (code, signal) => {
      child.hasExited = true;
      resolveExit();
      if (!shuttingDown) restartLater(name, index, vars, `${signal ?? `exit code ${code}`}`, Date.now() - startedAt);
    });
  });
  proc.once("error", (err) => {
    // A spawn that failed never runs: the same restart schedule applies (the exit event does not come).
    if (!child.hasExited && !shuttingDown) {
      child.hasExited = true;
      restartLater(name, index, vars, err.message, Date.now() - startedAt);
    }
  });
  createInterface({ input: proc.stdout! }).on("line", (line) => process.stdout.write(`${label} ${line}\n`));
  createInterface({ input: proc.stderr! }).on("line", (line) => process.stderr.write(`${label} ${line}\n`));
  const at = children.findIndex((c) => c.name === name);
  if (at >= 0) children[at] = child;
  else children.push(child);
  if (existsSync(pidsFile)) writePids();
}

/** Consecutive quick crashes per service: each doubles the wait before the next start, up to restartBackoffMaxMs. */
const crashes = new Map<ServiceName, number>();

/**
 * The stack supervises its services: one that dies is started again after a backoff (1 s, 2 s, 4 s … 30 s; a run
 * longer than a minute starts the count over), with a log line, and the others keep serving. Only Ctrl-C (or
 * SIGTERM) stops the stack.
 */
function restartLater(name: ServiceName, index: number, vars: NodeJS.ProcessEnv, why: string, ranMs: number): void {
  const n = ranMs > restartResetAfterMs ? 1 : (crashes.get(name) ?? 0) + 1;
  crashes.set(name, n);
  const waitMs = Math.min(restartBackoffMaxMs, 1_000 * 2 ** (n - 1));
  shout(`${name} exited unexpectedly (${why}); restarting it in ${waitMs / 1000} s`);
  setTimeout(() => {
    if (shuttingDown) return;
    say(`restarting ${name} (attempt ${n})`);
    startService(name, index, vars);
  }, waitMs);
}

function writePids(): void {
  writeFileSync(pidsFile, JSON.stringify(children.map((c) => ({ name: c.name, pid: c.proc.pid }))));
}

async function waitUntilReady(): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  const pending = new Set<ServiceName>(SERVICES);
  say(`waiting for ${pending.size} services to answer /readyz`);
  while (pending.size > 0 && !shuttingDown) {
    for (const name of [...pending]) {
      try {
        const res = await fetch(`http://127.0.0.1:${HEALTH_PORTS[name]}/readyz`, { signal: AbortSignal.timeout(1_000) });
        await res.body?.cancel();
        if (res.status === 200) {
          pending.delete(name);
          say(`${name} ready`);
        }
      } catch {
        // not listening yet
      }
    }
    if (pending.size === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`not ready within ${readyTimeoutMs} ms: ${[...pending].join(", ")} (GET /readyz did not answer 200)`);
    }
    await new Promise((r) => setTimeout(r, readyPollIntervalMs));
  }
}

// -------------------------------------------------------------------------------------------------------------
// stopping

let shutdownPromise: Promise<void> | undefined;

async function shutdown(code: number): Promise<void> {
  shutdownPromise ??= (async () => {
    shuttingDown = true;
    const live = children.filter((c) => !c.hasExited);
    if (live.length > 0) say(`stopping ${live.length} services`);
    for (const c of live) c.proc.kill("SIGTERM");
    const timedOut = await Promise.race([
      Promise.all(live.map((c) => c.exited)).then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), stopTimeoutMs)),
    ]);
    if (timedOut) {
      const stuck = live.filter((c) => !c.hasExited);
      say(`${stuck.map((c) => c.name).join(", ")} did not stop within ${stopTimeoutMs} ms: SIGKILL`);
      for (const c of stuck) c.proc.kill("SIGKILL");
      await Promise.race([Promise.all(stuck.map((c) => c.exited)), new Promise((r) => setTimeout(r, 5_000))]);
    }
    rmSync(pidsFile, { force: true });
    for (const { name, server } of infra.splice(0)) {
      say(`stopping ${name}`);
      await server.stop().catch((err: unknown) => console.error(`[dev] stopping ${name} failed: ${String(err)}`));
    }
    say(code === 0 ? "stopped" : `stopped (exit ${code})`);
    process.exit(code);
  })();
  return shutdownPromise;
}

/**
 * Services that an earlier run started and could not stop (it was killed with -9) still hold their ports.
 * Their pids are in .data/dev-services.json; a pid is trusted only when /proc says it still runs that service.
 */
async function stopLeftoverServices(): Promise<void> {
  if (!existsSync(pidsFile)) return;
  let saved: { name: string; pid: number }[] = [];
  try {
    saved = JSON.parse(readFileSync(pidsFile, "utf8")) as { name: string; pid: number }[];
  } catch {
    saved = [];
  }
  const leftovers = saved.filter(({ name, pid }) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(join("services", name, "src", "main.ts"));
    } catch {
      return false;
    }
  });
  if (leftovers.length > 0) {
    say(`stopping ${leftovers.length} services left running by an earlier start: ${leftovers.map((l) => `${l.name} (${l.pid})`).join(", ")}`);
    for (const { pid } of leftovers) process.kill(pid, "SIGTERM");
    const deadline = Date.now() + stopTimeoutMs;
    while (Date.now() < deadline && leftovers.some(({ pid }) => existsSync(`/proc/${pid}`))) await new Promise((r) => setTimeout(r, 100));
    for (const { pid } of leftovers) if (existsSync(`/proc/${pid}`)) process.kill(pid, "SIGKILL");
  }
  rmSync(pidsFile, { force: true });
}

function redactPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}

let interrupts = 0;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    interrupts += 1;
    if (interrupts > 1) {
      // A second Ctrl-C: do not wait for graceful shutdown of the services.
      for (const c of children) if (!c.hasExited) c.proc.kill("SIGKILL");
      return;
    }
    say(`${signal}: shutting down`);
    void shutdown(0);
  });
}

main().catch(async (err: unknown) => {
  if (err instanceof MissingBinaryError) shout("missing system dependency");
  console.error(`[dev] ${err instanceof Error ? err.message : String(err)}`);
  if (!(err instanceof MissingBinaryError) && err instanceof Error && err.stack !== undefined) console.error(err.stack);
  await shutdown(1);
});
