// Proves the kit's operator commands on real PostgreSQL: an atomic command and its audit row commit together or not
// at all (a failure leaves its failed row only), a non-atomic one is recorded after its outcome, the flags are
// checked with the flag named, the log is append-only and `audit list` filters it; and `find` reads the outbox.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DomainError, type AdminRequest } from "@treasury/contracts";
import { requiredFlag, runAdmin, type AdminCommand } from "./admin.ts";
import { findEvents, listAuditLog } from "./admin-reads.ts";
import { createDb, type Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { captureLogger, createTestDatabase, type TestDatabase } from "./test-support.ts";

const SCHEMA = "kit_admin";
const { log } = captureLogger("admin");
let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  await migrateAll({ adminUrl: db.url, rootDir: await mkdtemp(join(tmpdir(), "kit-admin-")), services: [SCHEMA] });
  sql = createDb(db.url, { max: 4 });
  await sql`create table kit_admin.things (name text primary key)`;
});

afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

const deps = () => ({ sql, schema: SCHEMA, log });
const ctx = (requestId: string) => ({ requestId, log });
const request = (flags: AdminRequest["flags"], extra: Partial<AdminRequest> = {}): AdminRequest => ({ actor: "ops:ada", flags, positionals: [], ...extra });

/** Creates a thing through the audit row's transaction; a name starting with "bad" fails after the insert. */
const createThing: AdminCommand<{ name: string }> = {
  decode: (r) => ({ name: requiredFlag(r, "name") }),
  audit: {
    atomic: true,
    target: (seen, result) => ({
      orgId: "org_1",
      livemode: false,
      targetIds: [seen.input?.name, result === undefined ? undefined : "thing"],
      details: { n: 1 },
    }),
  },
  async run(call) {
    await call.q`insert into kit_admin.things (name) values (${call.input.name})`;
    if (call.input.name.startsWith("bad")) throw new DomainError("invalid_state_transition", "refused after the insert");
    return { name: call.input.name };
  },
};

describe("operator commands", () => {
  it("commits an atomic change with its row; a failure leaves neither the change nor a success row, only the failure", async () => {
    expect(await runAdmin(deps(), "thing create", createThing, request({ name: "one" }, { reason: "ticket 1" }), ctx("req_a"))).toEqual({ name: "one" });
    await expect(runAdmin(deps(), "thing create", createThing, request({ name: "bad" }), ctx("req_b"))).rejects.toMatchObject({
      code: "invalid_state_transition",
    });
    expect((await sql`select name from kit_admin.things order by name`).map((r) => r["name"])).toEqual(["one"]);
    const rows = await sql`select actor, action, org_id, livemode, target_ids, reason, outcome, error_code, details from kit_admin.audit_log order by id`;
    expect(rows).toEqual([
      {
        actor: "ops:ada",
        action: "thing.create",
        org_id: "org_1",
        livemode: false,
        target_ids: ["one", "thing"],
        reason: "ticket 1",
        outcome: "succeeded",
        error_code: null,
        details: { n: 1, request_id: "req_a" },
      },
      {
        actor: "ops:ada",
        action: "thing.create",
        org_id: "org_1",
        livemode: false,
        target_ids: ["bad"],
        reason: null,
        outcome: "failed",
        error_code: "invalid_state_transition",
        details: { n: 1, request_id: "req_b" },
      },
    ]);
  });

  it("names a missing flag, records the attempt, and refuses a malformed request before anything runs", async () => {
    await expect(runAdmin(deps(), "thing create", createThing, request({}), ctx("req_c"))).rejects.toThrow("missing --name");
    const [row] = await sql`select outcome, error_code, target_ids from kit_admin.audit_log where details->>'request_id' = 'req_c'`;
    expect(row).toEqual({ outcome: "failed", error_code: "validation_error", target_ids: [] });
    await expect(runAdmin(deps(), "thing create", createThing, { actor: " ", flags: {} }, ctx("req_d"))).rejects.toMatchObject({ code: "validation_error" });
    expect(await sql`select 1 from kit_admin.audit_log where details->>'request_id' = 'req_d'`).toHaveLength(0);
  });

  it("records a non-atomic command after its outcome, and none when the service keeps successes itself", async () => {
    const ping: AdminCommand<undefined> = {
      decode: () => undefined,
      audit: { atomic: false, target: (_s, result) => ({ targetIds: [String(result?.["pong"] ?? "")] }) },
      run: async (call) => {
        expect(call.q).toBe(sql);
        return { pong: "p1" };
      },
    };
    await runAdmin(deps(), "ping send", ping, request({}), ctx("req_e"));
    await runAdmin(deps(), "ping send", { ...ping, audit: { ...ping.audit!, successKeptIn: "elsewhere" } }, request({}), ctx("req_f"));
    expect((await sql`select target_ids, outcome from kit_admin.audit_log where action = 'ping.send'`).map((r) => [r["target_ids"], r["outcome"]])).toEqual([
      [["p1"], "succeeded"],
    ]);
  });

  it("lists by org, action group or command, time, target and limit, newest first; the log cannot be changed", async () => {
    const all = await listAuditLog(sql, SCHEMA, { limit: 100 }, []);
    expect(all.entries.map((e) => e.action)).toEqual(["ping.send", "thing.create", "thing.create", "thing.create"]);
    expect(all.entries[0]?.source).toBe("kit_admin.audit_log");
    expect((await listAuditLog(sql, SCHEMA, { action: "thing", org_id: "org_1", limit: 100 }, [])).entries).toHaveLength(3);
    expect((await listAuditLog(sql, SCHEMA, { action: "ping.send", limit: 100 }, [])).entries).toHaveLength(1);
    expect((await listAuditLog(sql, SCHEMA, { targets: ["one"], limit: 100 }, [])).entries).toHaveLength(1);
    expect((await listAuditLog(sql, SCHEMA, { since: "2999-01-01T00:00:00Z", limit: 100 }, [])).entries).toHaveLength(0);
    expect((await listAuditLog(sql, SCHEMA, { limit: 2 }, [])).entries).toHaveLength(2);
    const extra = await listAuditLog(sql, SCHEMA, { limit: 100 }, [
      async () => [{ ...(all.entries[0] as (typeof all.entries)[0]), source: "kit_admin.decisions", id: "9" }],
    ]);
    expect(extra.entries.map((e) => e.source)).toContain("kit_admin.decisions");
    for (const statement of ["update kit_admin.audit_log set actor = 'x'", "delete from kit_admin.audit_log", "truncate kit_admin.audit_log"]) {
      const err = await sql.unsafe(statement).catch((e: unknown) => e);
      expect((err as postgres.PostgresError).code, statement).toBe("42501");
    }
  });
});

describe("find's events", () => {
  it("finds events by id, by an id they name or the request that caused them, and who consumed them", async () => {
    const payload = (data: Record<string, unknown>) => sql.json({ data } as postgres.JSONValue);
    await sql`
      insert into kit_admin.outbox (id, org_id, livemode, type, subject, payload, headers) values
        ('evt_1', 'org_1', false, 'thing.created', 's', ${payload({ thing: "po_1" })}, ${sql.json({ "x-request-id": "req_1" })}),
        ('evt_2', 'org_1', false, 'thing.created', 's', ${payload({ nested: [{ deep: "po_2" }] })}, '{}'),
        ('evt_3', 'org_1', false, 'thing.created', 's', ${payload({ other: "po_3" })}, '{}')`;
    await sql`insert into kit_admin.inbox (consumer, event_id) values ('fanout', 'evt_2')`;
    const found = await findEvents(sql, SCHEMA, { event_ids: ["evt_3"], ids: ["po_2"], requests: ["req_1"], consumed: ["evt_2", "evt_9"] }, undefined);
    expect(found.events.map((e) => [e.row.id, e.by_id])).toEqual([
      ["evt_3", true],
      ["evt_2", false],
      ["evt_1", false],
    ]);
    expect(found.events[0]?.row.seq).toEqual(expect.any(Number));
    expect(found.consumed.map((c) => [c.consumer, c.event_id])).toEqual([["fanout", "evt_2"]]);
    expect(found.truncated).toBe(false);
    const mentions = await findEvents(
      sql,
      SCHEMA,
      { event_ids: [], ids: ["po_3"], requests: [], consumed: [] },
      {
        mentions: async (ids) => [{ table: "kit_admin.things", row: { ids }, follow: false }],
      },
    );
    expect(mentions.hits).toEqual([{ table: "kit_admin.things", row: { ids: ["po_3"] }, follow: false }]);
  });
});
