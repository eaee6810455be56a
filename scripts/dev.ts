// `npm start`: the whole system on one machine.
//   1. PostgreSQL and NATS JetStream: DATABASE_URL (admin URL) / NATS_URL when set, else private servers from the
//      machine's binaries with their data under .data/ (DEV_DATA_DIR, 0700; kept between starts), on their own ports;
//      with DEV_NATS_CLUSTER=3 NATS is a three-node JetStream cluster and the EVENTS stream has three replicas.
//      The private PostgreSQL trusts no one: every connection authenticates with scram-sha-256 (superuser password
//      generated into .data/db-superuser-password.json).
//   2. Migrations for every service.
//   3. A sandbox org and test key on first start (.data/dev-credentials.json), reused afterwards. Each service's
//      NATS password and database role password are generated on first start into the data folder (readable by
//      its owner only) and reused; the private nats-server gets the authorization of the permission matrix (ADR 0011).
//   4. Every service as its own child process, output prefixed with its name; waits until all are ready.
// Ctrl-C / SIGTERM stops the services, then the servers it started. A service that dies is restarted (backoff).
// The steps live in scripts/dev/: config (paths, ports), servers, secrets, services, and the shared state.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NATS_ADMIN_USER, NATS_IDENTITIES, NATS_MIGRATIONS_USER, SERVICES } from "@treasury/contracts";
import { migrateAll, migrateEventsStream } from "@treasury/service-kit";
import { MissingBinaryError } from "@treasury/testing/servers";
import {
  altPort,
  bold,
  credentialsFile,
  dataRoot,
  env,
  eventsReplicas,
  host,
  mainPort,
  natsPasswordsFile,
  pidsFile,
  rolePasswordsFile,
  root,
  say,
  shout,
  stopTimeoutMs,
} from "./dev/config.ts";
import { ensureCredentials, ensureSecrets, redactPassword, withCredentials } from "./dev/secrets.ts";
import { checkBinaries, checkPortsFree, startPrivateNats, startPrivatePostgres } from "./dev/servers.ts";
import { serviceEnv, startService, stopLeftoverServices, waitUntilReady, writePids } from "./dev/services.ts";
import { stack } from "./dev/state.ts";

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
  if (stack.shuttingDown) return;

  say("running migrations");
  const rolePasswords = ensureSecrets(rolePasswordsFile, SERVICES, "database role passwords");
  await migrateAll({ adminUrl, rootDir: root, services: [...SERVICES], rolePasswords, log: (m) => say(`migrate: ${m}`) });
  // The EVENTS stream, as the migrate step makes it: as the `migrations` identity, the only one allowed to (ADR 0011).
  const migrationsPassword = natsPasswords?.[NATS_MIGRATIONS_USER];
  await migrateEventsStream(
    { url: natsUrl, name: "dev-migrate", ...(migrationsPassword !== undefined ? { user: NATS_MIGRATIONS_USER, password: migrationsPassword } : {}) },
    env["NATS_PREFIX"] ?? "",
    eventsReplicas,
  );
  const credentials = await ensureCredentials(adminUrl);
  // The admin CLI (`npm run -s admin -- …`) finds NATS here as its own identity (the credentials in the URL) when
  // NATS_URL is not set, so this file is readable by its owner only; the database URL is for the operator's psql.
  const adminNatsUrl = natsPasswords === undefined ? natsUrl : withCredentials(natsUrl, NATS_ADMIN_USER, natsPasswords[NATS_ADMIN_USER] ?? "");
  writeFileSync(join(dataRoot, "dev-stack.json"), JSON.stringify({ database_url: adminUrl, nats_url: adminNatsUrl }, null, 2), { mode: 0o600 });
  chmodSync(join(dataRoot, "dev-stack.json"), 0o600);
  if (stack.shuttingDown) return;

  for (const [i, name] of SERVICES.entries())
    startService(name, i, serviceEnv(name, { adminUrl, natsUrl, rolePassword: rolePasswords[name], natsPassword: natsPasswords?.[name] }));
  writePids();
  await waitUntilReady();
  if (stack.shuttingDown) return;

  const base = `http://${host}:${mainPort}`;
  const alt = env["ALT_BASE_URL"] ?? `http://${host}:${altPort}`;
  console.log(
    [
      "",
      bold(`Treasury is up (${SERVICES.length} services).`),
      `  API base URL : ${base}`,
      `  Alt URL      : ${alt}   (hosted checkout / wallet / receipt pages)`,
      `  Console      : ${alt}/console   (operators: npm run -s admin -- operator create --email … --role admin --password-stdin)`,
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

// -------------------------------------------------------------------------------------------------------------
// stopping

let shutdownPromise: Promise<void> | undefined;

async function shutdown(code: number): Promise<void> {
  shutdownPromise ??= (async () => {
    stack.shuttingDown = true;
    const live = stack.children.filter((c) => !c.hasExited);
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
    for (const { name, server } of stack.infra.splice(0)) {
      say(`stopping ${name}`);
      await server.stop().catch((err: unknown) => console.error(`[dev] stopping ${name} failed: ${String(err)}`));
    }
    say(code === 0 ? "stopped" : `stopped (exit ${code})`);
    process.exit(code);
  })();
  return shutdownPromise;
}

let interrupts = 0;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    interrupts += 1;
    if (interrupts > 1) {
      // A second Ctrl-C: do not wait for graceful shutdown of the services.
      for (const c of stack.children) if (!c.hasExited) c.proc.kill("SIGKILL");
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
