// Starts real PostgreSQL, NATS (JetStream) and Redis servers from the machine's own binaries. Used by the
// test harness (private servers per test run) and by the dev stack (`npm start`). Nothing here is a stand-in:
// these are the same servers production talks to, only private, on their own ports and data folders.
export {
  findBinary,
  findPostgresBinaries,
  firstUntraversableAncestor,
  freePort,
  INSTALL_HINT,
  isRoot,
  lookupUser,
  makeScratchDir,
  MissingBinaryError,
  portAcceptsConnections,
  type PostgresBinaries,
  type RunningServer,
  type UnixUser,
} from "./servers/host.ts";
export { startPostgres, stopPostgresSync, type PostgresServer, type StartPostgresOptions } from "./servers/postgres.ts";
export { startNatsCluster, type NatsCluster, type NatsClusterNode, type StartNatsClusterOptions } from "./servers/nats-cluster.ts";
export { startNats, startRedis, type NatsServer, type RedisServer, type StartNatsOptions, type StartRedisOptions } from "./servers/child.ts";
