// Proves migrateAll creates the kit tables and that each service role can write only its own schema.
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceDatabaseUrl } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { createTestDatabase } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

let db: TestDatabase;
let rootDir: string;
const clients: postgres.Sql[] = [];

function connect(url: string): postgres.Sql {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  clients.push(sql);
  return sql;
}

async function writeMigration(service: string, file: string, text: string): Promise<void> {
  const dir = join(rootDir, "services", service, "migrations");
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, file), text);
}

beforeAll(async () => {
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-migrate-"));
  await writeMigration("ledger", "0001_entries.sql", "create table entries (id bigserial primary key, amount bigint not null);");
  await writeMigration("ledger", "0002_note.sql", "alter table entries add column note text;");
  await writeMigration("payments", "0001_sessions.sql", "create table sessions (id text primary key);");
  // Two concurrent runs must not trip over each other (advisory lock) nor over the shared roles.
  await Promise.all([
    migrateAll({ adminUrl: db.url, rootDir, services: ["ledger", "payments"] }),
    migrateAll({ adminUrl: db.url, rootDir, services: ["ledger", "payments"] }),
  ]);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

describe("migrateAll", () => {
  it("creates the kit tables and records each migration once", async () => {
    const admin = connect(db.url);
    const tables = await admin<{ table_name: string }[]>`
      select table_name from information_schema.tables where table_schema = 'ledger' order by table_name`;
    expect(tables.map((t) => t.table_name)).toEqual([
      "audit_log",
      "entries",
      "event_seq",
      "inbox",
      "outbox",
      "risk_fail_modes",
      "risk_fail_safes",
      "sandbox_clocks",
      "schema_migrations",
    ]);
    const applied = await admin<{ version: string }[]>`select version from ledger.schema_migrations order by version`;
    expect(applied.map((r) => r.version)).toEqual(["0001_entries.sql", "0002_note.sql"]);
    const [index] = await admin`select indexdef from pg_indexes where schemaname = 'ledger' and indexname = 'outbox_unpublished_idx'`;
    expect(String(index?.["indexdef"])).toContain("WHERE (published_at IS NULL)");
  });

  it("is idempotent and applies only new files on a later run", async () => {
    await writeMigration("payments", "0002_more.sql", "create table more (id int);");
    const log: string[] = [];
    await migrateAll({ adminUrl: db.url, rootDir, services: ["ledger", "payments"], log: (m) => log.push(m) });
    expect(log).toEqual(["payments: applied 0002_more.sql"]);
  });

  it("lets a service role write its own schema, including the kit tables", async () => {
    const payments = connect(serviceDatabaseUrl(db.url, "payments"));
    await payments`insert into payments.sessions (id) values ('cs_1')`;
    await payments`insert into payments.more (id) values (1)`;
    await payments`insert into payments.outbox (id, org_id, livemode, type, subject, payload) values ('evt_1', 'org_1', false, 'sandbox.test', 'evt.sandbox.test', '{}')`;
    const [row] = await payments`select count(*)::int as n from payments.sessions`;
    expect(row?.["n"]).toBe(1);
  });

  it("denies a service role any access to another service's schema", async () => {
    const payments = connect(serviceDatabaseUrl(db.url, "payments"));
    await expect(payments`insert into ledger.entries (amount) values (100)`).rejects.toMatchObject({ code: "42501" });
    await expect(payments`select * from ledger.entries`).rejects.toMatchObject({ code: "42501" });
    await expect(
      payments`insert into ledger.outbox (id, org_id, livemode, type, subject, payload) values ('x', 'o', false, 't', 's', '{}')`,
    ).rejects.toMatchObject({ code: "42501" });
    const ledger = connect(serviceDatabaseUrl(db.url, "ledger"));
    await ledger`insert into ledger.entries (amount, note) values (100, 'ok')`;
    await expect(ledger`insert into payments.sessions (id) values ('cs_2')`).rejects.toMatchObject({ code: "42501" });
  });

  describe("kit indexes on tables that may hold rows", () => {
    const indexState = async (admin: postgres.Sql, name: string) =>
      (
        await admin<{ valid: boolean }[]>`
        select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
        join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'ledger' and c.relname = ${name}`
      )[0];
    let seq = 0;
    const insertEvent = (q: postgres.Sql | postgres.TransactionSql) =>
      q`insert into ledger.outbox (id, org_id, livemode, type, subject, payload) values (${`evt_ix_${++seq}`}, 'org_1', false, 'sandbox.test', 'evt.sandbox.test', '{}')`;

    it("builds a missing one without blocking the writers of the table", async () => {
      const admin = connect(db.url);
      await insertEvent(admin);
      await admin`drop index ledger.outbox_published_idx`;
      // A transaction that has written to the outbox and is still open: any index build waits for it. A plain
      // CREATE INDEX would also queue every later writer behind its lock; a concurrent one does not.
      const holder = postgres(db.url, { max: 1, onnotice: () => {} });
      clients.push(holder);
      let releaseHolder!: () => void;
      const holderDone = holder.begin(async (tx) => {
        await insertEvent(tx);
        await new Promise<void>((r) => (releaseHolder = r));
      });
      await expect.poll(() => seq, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
      const migrating = migrateAll({ adminUrl: db.url, rootDir, services: ["ledger"] });
      try {
        await expect
          .poll(
            async () =>
              (await admin`select 1 from pg_stat_activity where application_name = 'migrate' and query ilike 'create index%' and wait_event_type = 'Lock'`)
                .length,
            { timeout: 10_000 },
          )
          .toBe(1);
        const writer = connect(db.url);
        await writer.begin(async (tx) => {
          await tx`set local statement_timeout = 3000`;
          await insertEvent(tx);
        });
      } finally {
        releaseHolder();
        await holderDone;
        await migrating;
      }
      expect(await indexState(admin, "outbox_published_idx")).toEqual({ valid: true });
    });

    it("rebuilds one that an interrupted build left invalid", async () => {
      const admin = connect(db.url);
      // What a CREATE INDEX CONCURRENTLY that failed halfway leaves behind.
      await admin`update pg_index set indisvalid = false where indexrelid = 'ledger.inbox_processed_idx'::regclass`;
      expect(await indexState(admin, "inbox_processed_idx")).toEqual({ valid: false });
      await migrateAll({ adminUrl: db.url, rootDir, services: ["ledger"] });
      expect(await indexState(admin, "inbox_processed_idx")).toEqual({ valid: true });
    });
  });
});
