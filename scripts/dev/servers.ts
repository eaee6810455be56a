// The servers under the dev stack: the system dependencies it needs, the ports it will listen on, and the private
// PostgreSQL and nats-server it starts when DATABASE_URL / NATS_URL name none.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { natsConfigString, natsServerAuthorization, natsUsers, SERVICES } from "@treasury/contracts";
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
  startNatsCluster,
  startPostgres,
} from "@treasury/testing/servers";
import {
  altPort,
  dataRoot,
  env,
  HEALTH_PORTS,
  host,
  mainPort,
  maxConnections,
  natsNodes,
  natsPort,
  pgPort,
  root,
  say,
  superuserPasswordFile,
} from "./config.ts";
import { ensureSecrets } from "./secrets.ts";
import { stack } from "./state.ts";

export function checkBinaries(): void {
  const missing: string[] = [];
  if ((env["DATABASE_URL"] ?? "") === "" && findPostgresBinaries() === undefined) missing.push(INSTALL_HINT.postgres);
  if ((env["NATS_URL"] ?? "") === "" && findBinary("nats-server") === undefined) missing.push(INSTALL_HINT.nats);
  if (missing.length > 0) throw new MissingBinaryError(missing.join("\n"));
}

export async function checkPortsFree(): Promise<void> {
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
export async function startPrivatePostgres(): Promise<string> {
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
  stack.infra.unshift({ name: "PostgreSQL", server: pg });
  say(`PostgreSQL ready (max_connections ${maxConnections}, log ${pg.logFile})`);
  return pg.url;
}

/**
 * The private nats-server runs with the permission matrix (ADR 0011), rendered afresh on every start from the
 * passwords of the data folder: a change of the matrix takes effect with the next start.
 */
export async function startPrivateNats(passwords: Record<string, string>): Promise<string> {
  const configFile = join(dataRoot, "nats.conf");
  const users = natsUsers((identity) => natsConfigString(passwords[identity] ?? ""), { prefix: env["NATS_PREFIX"] ?? "" });
  writeFileSync(configFile, natsServerAuthorization(users), { mode: 0o600 });
  chmodSync(configFile, 0o600);
  if (natsNodes > 1) return startPrivateNatsCluster(configFile);
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
  stack.infra.unshift({ name: "NATS", server: nats });
  return nats.url;
}

/** Route and monitoring ports of the private cluster's nodes, above their client ports. */
const ROUTE_PORT_OFFSET = 10;
const MONITOR_PORT_OFFSET = 20;

/**
 * DEV_NATS_CLUSTER=3: three nodes with routes to each other and the same authorization, each with its store, log and
 * pid file under .data/nats-cluster (a store apart from the single server's, whose stream has one replica).
 */
async function startPrivateNatsCluster(configFile: string): Promise<string> {
  // Two nodes elect nothing once one is gone: a replicated stream needs three to survive a node's loss.
  if (!Number.isInteger(natsNodes) || natsNodes < 3) throw new Error(`DEV_NATS_CLUSTER must be 3 or more (or unset for one server), not ${natsNodes}`);
  const dir = join(dataRoot, "nats-cluster");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ports = Array.from({ length: natsNodes }, (_, i) => ({
    client: natsPort + i,
    route: natsPort + ROUTE_PORT_OFFSET + i,
    monitor: natsPort + MONITOR_PORT_OFFSET + i,
  }));
  say(
    `starting a ${natsNodes}-node NATS JetStream cluster on 127.0.0.1:${ports.map((p) => p.client).join(", ")} (routes ${ports.map((p) => p.route).join(", ")}, monitoring ${ports.map((p) => p.monitor).join(", ")}; store and logs ${dir})`,
  );
  const cluster = await startNatsCluster({ dir, nodes: natsNodes, configFile, ports, logDir: dir, pidFiles: true, detached: true });
  stack.infra.unshift({ name: "NATS cluster", server: cluster });
  say(`NATS cluster ready: ${cluster.nodes.map((n) => n.name).join(", ")}`);
  return cluster.url;
}
