// What the global setup hands to every test worker (vitest `provide` → `inject`).

/** Servers and the migrated template database of one test run. */
export interface TestInfra {
  /** Superuser URL of a maintenance database (`postgres`) on the test PostgreSQL. */
  adminUrl: string;
  /** Migrated database that every test file's database is copied from. */
  templateDb: string;
  /** The test superuser's URL (`nats://user:password@host:port`) when the harness started NATS with authorization. */
  natsUrl: string;
  /**
   * Each identity's NATS password (ADR 0011) when the harness started NATS with the permission matrix; absent on
   * a server named by TEST_NATS_URL, which the services then reach without credentials.
   */
  natsPasswords?: Record<string, string>;
  redisUrl: string;
  /**
   * NATS nodes the harness started: 3 (or more) with TEST_NATS_CLUSTER, a JetStream cluster whose URLs `natsUrl`
   * lists comma-separated, and on which each file's EVENTS stream gets that many replicas; absent for one server.
   */
  natsNodes?: number;
  /** Short id of this run: per-file database names start with `t_<runId>_`. */
  runId: string;
}

export const INFRA_KEY = "treasuryTestInfra";

declare module "vitest" {
  export interface ProvidedContext {
    treasuryTestInfra: TestInfra;
  }
}

/** `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}
