// Proves withTx retries serialization failures until both conflicting transactions commit, does not retry
// other errors, and that int8/numeric columns come back as strings.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, isDatabaseUnavailable, withTx } from "./db.ts";
import type { Sql } from "./db.ts";
import { createTestDatabase } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = createDb(db.url, { max: 4 });
  await sql`create table counters (id int primary key, n bigint not null, amount numeric not null)`;
  await sql`insert into counters values (1, 9007199254740993, 12.50)`;
  await sql`create table rows (v int not null)`;
});

afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

describe("withTx", () => {
  it("retries serialization failures so both write-skew transactions commit", async () => {
    let attempts = 0;
    // Each reads the table then inserts: under serializable, one of two overlapping runs must fail with 40001.
    const run = (v: number, gate: Promise<void>, arrived: () => void) =>
      withTx(
        sql,
        async (tx) => {
          attempts += 1;
          await tx`select count(*) from rows`;
          arrived();
          await gate;
          await tx`insert into rows values (${v})`;
        },
        { isolation: "serializable", retries: 5 },
      );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let arrivedCount = 0;
    const arrived = () => {
      arrivedCount += 1;
      if (arrivedCount === 2) release();
    };
    await Promise.all([run(1, gate, arrived), run(2, gate, arrived)]);
    expect(attempts).toBeGreaterThan(2);
    const rows = await sql`select v from rows order by v`;
    expect(rows.map((r) => r["v"])).toEqual([1, 2]);
  });

  it("does not retry other errors", async () => {
    let attempts = 0;
    await expect(
      withTx(sql, async (tx) => {
        attempts += 1;
        await tx`insert into counters values (1, 0, 0)`;
      }),
    ).rejects.toBeInstanceOf(postgres.PostgresError);
    expect(attempts).toBe(1);
  });

  it("keeps int8 and numeric as strings", async () => {
    const [row] = await sql`select n, amount from counters where id = 1`;
    expect(row).toEqual({ n: "9007199254740993", amount: "12.50" });
  });
});

describe("a connection the server closes", () => {
  // Proves the pinned postgres.js patch (patches/postgres+3.4.9.patch, ADR 0010): pipelined statements on a
  // reserved connection whose server went away fail, never the process (a TypeError thrown from a timer) and
  // never by waiting forever; the released connection is not handed out again, and the next query reconnects.
  it("fails a reserved connection's queries when its backend dies, and the pool serves the next query", async () => {
    const conn = await sql.reserve();
    const [me] = await conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    await admin`select pg_terminate_backend(${me?.pid ?? 0})`;
    await admin.end();
    const big = "x".repeat(4096);
    // As the ledger's batches send them: BEGIN, a statement, COMMIT, without waiting in between.
    const pipeline = () => Promise.allSettled([conn`begin`.execute(), conn`select ${big}::text`.execute(), conn`commit`.execute()]);
    const first = await pipeline();
    expect(first.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    // Now the client has seen the close: the same again takes the closed-connection path.
    const second = await pipeline();
    expect(second.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of [...first, ...second]) expect(isDatabaseUnavailable((r as PromiseRejectedResult).reason)).toBe(true);
    conn.release();
    const [row] = await sql<{ one: number }[]>`select 1 as one`;
    expect(row?.one).toBe(1);
  });
});
