import { readdirSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsStreamName, SERVICES } from "@treasury/contracts";
import { connectNats, parseNatsUrl } from "@treasury/service-kit";
import { freePort, repoRoot, setupTestEnv, spawnService, TEST_NATS_SUPERUSER, waitFor, type TestEnv } from "./index.ts";

describe("test harness", () => {
  let a: TestEnv;
  let b: TestEnv;

  beforeAll(async () => {
    [a, b] = await Promise.all([setupTestEnv(), setupTestEnv()]);
  });
  afterAll(async () => {
    await Promise.all([a?.cleanup(), b?.cleanup()]);
  });

  it("gives each setupTestEnv() its own database and subject prefix", async () => {
    // Proves isolation between test files: different databases and prefixes, and a write in one is invisible in the other.
    expect(a.database).not.toBe(b.database);
    expect(a.prefix).not.toBe(b.prefix);
    expect(a.prefix).toMatch(/^t[a-z0-9]{1,6}\.$/);
    const [dbA] = await a.adminSql<{ db: string }[]>`select current_database() as db`;
    const [dbB] = await b.adminSql<{ db: string }[]>`select current_database() as db`;
    expect(dbA?.db).toBe(a.database);
    expect(dbB?.db).toBe(b.database);
    await a.adminSql`create table public.harness_probe (id int)`;
    const [inB] = await b.adminSql<{ t: string | null }[]>`select to_regclass('public.harness_probe')::text as t`;
    expect(inB?.t).toBeNull();
  });

  it("builds service env on the file's database, prefix, the service's own role and its own NATS identity", () => {
    // Proves env() points a service at its own role on this file's database, with this file's prefix, and at NATS as itself.
    const env = a.env("ledger", { EXTRA: "1" });
    expect(new URL(env["DATABASE_URL"] ?? "").username).toBe("ledger_svc");
    expect(new URL(env["DATABASE_URL"] ?? "").pathname).toBe(`/${a.database}`);
    expect(env["NATS_PREFIX"]).toBe(a.prefix);
    const superuser = parseNatsUrl(a.natsUrl);
    expect(env["NATS_URL"]).toBe(superuser.server);
    // A server named by TEST_NATS_URL runs without the harness's authorization: no identities there.
    if (a.natsCredentials("ledger") !== undefined) {
      expect(superuser.user).toBe(TEST_NATS_SUPERUSER);
      expect(env["NATS_USER"]).toBe("ledger");
      expect(env["NATS_PASSWORD"]).toBe(a.natsCredentials("ledger")?.password);
      expect(env["NATS_PASSWORD"]).not.toBe(a.env("payments")["NATS_PASSWORD"]);
    }
    expect(env["HEALTH_PORT"]).toBe("0");
    expect(env["EXTRA"]).toBe("1");
  });

  it("publishes to JetStream on the real server", async () => {
    // Proves the NATS under test is a real JetStream: a stream under the prefix stores and acks a message.
    const nc = await connectNats({ url: a.natsUrl, name: "harness-test" });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = `${a.prefix.replace(/\.$/, "")}_HARNESS`;
      await jsm.streams.add({ name: stream, subjects: [`${a.prefix}harness.>`] });
      const ack = await jetstream(nc).publish(`${a.prefix}harness.ping`, "hello", { msgID: "m1" });
      expect(ack.stream).toBe(stream);
      expect(ack.seq).toBe(1);
      const dup = await jetstream(nc).publish(`${a.prefix}harness.ping`, "hello", { msgID: "m1" });
      expect(dup.duplicate).toBe(true);
      const info = await jsm.streams.info(stream);
      expect(info.state.messages).toBe(1);
    } finally {
      await nc.close();
    }
  });

  it("makes each file's EVENTS stream with as many replicas as the run's NATS has nodes", async () => {
    // Proves TEST_NATS_CLUSTER reaches the streams and the services: three replicas on a three-node cluster, one otherwise.
    const nodes = Number(process.env["TEST_NATS_CLUSTER"] || 1);
    expect(a.env("ledger")["EVENTS_REPLICAS"]).toBe(String(nodes));
    expect(parseNatsUrl(a.natsUrl).server.split(",")).toHaveLength(nodes);
    const nc = await connectNats({ url: a.natsUrl, name: "harness-replicas" });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(eventsStreamName(a.prefix));
      expect(info.config.num_replicas).toBe(nodes);
      expect(info.cluster?.replicas ?? []).toHaveLength(nodes - 1);
    } finally {
      await nc.close();
    }
  });

  it("copies the template: every service has its schema and kit tables", async () => {
    // Proves migrateAll ran into the template: kit tables exist per service in a fresh per-file database.
    const anyMigrations = SERVICES.some((s) => {
      try {
        return readdirSync(join(repoRoot(), "services", s, "migrations")).some((f) => f.endsWith(".sql"));
      } catch {
        return false;
      }
    });
    if (!anyMigrations) return;
    for (const service of SERVICES) {
      const [row] = await a.adminSql<{ t: string | null }[]>`select to_regclass(${`${service}.outbox`})::text as t`;
      expect(row?.t, `${service}.outbox`).toBe(`${service}.outbox`);
    }
  });

  it("keeps the ledger schema closed to other services' roles", async () => {
    // Proves grants came along with the template: payments_svc cannot read ledger tables.
    const sql = postgres(a.dbUrl("payments"), { max: 1, onnotice: () => {} });
    try {
      await expect(sql`select count(*) from ledger.outbox`).rejects.toThrow(/permission denied/);
      const [own] = await sql<{ n: string }[]>`select count(*)::text as n from payments.outbox`;
      expect(own?.n).toBe("0");
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  it("drops the database on cleanup", async () => {
    // Proves cleanup() removes the per-file database (and is idempotent).
    const c = await setupTestEnv();
    const name = c.database;
    await c.cleanup();
    await c.cleanup();
    const rows = await a.adminSql`select 1 from pg_database where datname = ${name}`;
    expect(rows.length).toBe(0);
  });

  it("spawns a service as a child process that becomes ready and can be killed with -9", async () => {
    // Proves spawnService runs services/<name>/src/main.ts for real: /readyz answers 200, SIGKILL ends it.
    const svc = spawnService("ledger", a.env("ledger", { HEALTH_PORT: String(await freePort()) }));
    try {
      await svc.ready;
      svc.kill("SIGKILL");
      await expect(svc.exited).resolves.toEqual({ code: null, signal: "SIGKILL" });
    } finally {
      svc.kill("SIGKILL");
    }
  }, 60_000);

  it("freePort never hands out one port twice in a process", async () => {
    const ports = [];
    for (let i = 0; i < 300; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
  });

  it("waitFor retries until the condition holds and gives up after its timeout", async () => {
    // Proves waitFor polls (resolves once the value turns true) and is bounded (rejects after timeoutMs).
    let calls = 0;
    await expect(waitFor(() => ++calls >= 3, { timeoutMs: 2_000, intervalMs: 5 })).resolves.toBe(true);
    expect(calls).toBe(3);
    await expect(waitFor(() => false, { timeoutMs: 50, intervalMs: 10 })).rejects.toThrow(/gave up/);
  });
});
