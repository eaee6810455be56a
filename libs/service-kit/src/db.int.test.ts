// Proves withTx retries serialization failures until both conflicting transactions commit, does not retry
// other errors, and that int8/numeric columns come back as strings; withPipelinedTx commits what its function
// sent as one transaction, rolls all of it back when the function or a statement fails, and returns its connection.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, isDatabaseUnavailable, trackPool, withPipelinedTx, withTx } from "./db.ts";
import type { Sql } from "./db.ts";
import { createTestDatabase, TEST_DATABASE_URL } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = createDb(db.url, { max: 4 });
  await sql`create table counters (id int primary key, n bigint not null, amount numeric not null)`;
  await sql`insert into counters values (1, 9007199254740993, 12.50)`;
  await sql`create table rows (v int not null)`;
  await sql`create table handoffs (v int not null)`;
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

/** Settles as `p` does, or rejects once `ms` have passed: a promise that never settles fails the test, not hangs it. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

const settleMs = 5_000;

/** A kit pool of one connection that counts the connections the server closed, so a test can wait for the client to see it. */
function onePool(): { sql: Sql; closes: () => number } {
  let closes = 0;
  const pool = postgres(db.url, { max: 1, onnotice: () => {}, onclose: () => (closes += 1) });
  trackPool(pool);
  return { sql: pool, closes: () => closes };
}

/** Ends `conn`'s session from another one, as a server restart does, and waits until its pool has seen the close. */
async function killBackend(conn: postgres.ReservedSql, closes: () => number): Promise<void> {
  const [me] = await conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
  const before = closes();
  // From the server's maintenance database, which stays open to connections when the test's own is closed to them.
  const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_terminate_backend(${me?.pid ?? 0})`;
  } finally {
    await admin.end();
  }
  const deadline = Date.now() + settleMs;
  while (closes() === before) {
    if (Date.now() > deadline) throw new Error("the pool did not see its connection close");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("a reserved connection after its connection closes", () => {
  // Proves a stale handle cannot reach the connection the pool reconnected for another caller (ADR 0010): its
  // ROLLBACK fails instead of ending the other caller's transaction, whose row is committed.
  it("does not send a stale handle's ROLLBACK to the next owner of the connection", async () => {
    const { sql: pool, closes } = onePool();
    try {
      const stale = await pool.reserve();
      await killBackend(stale, closes);
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      let finish!: () => void;
      const gate = new Promise<void>((r) => (finish = r));
      // The pool has one connection: this transaction runs on the same connection, reconnected.
      const other = pool.begin(async (tx) => {
        await tx`insert into handoffs values (7)`;
        entered();
        await gate;
      });
      await within(inside, settleMs, "the other transaction");
      const rollback = await within(
        stale`rollback`.execute().then(
          () => undefined,
          (e: unknown) => e,
        ),
        settleMs,
        "the stale ROLLBACK",
      );
      finish();
      await other;
      expect(isDatabaseUnavailable(rollback)).toBe(true);
      const rows = await pool<{ v: number }[]>`select v from handoffs where v = 7`;
      expect(rows.length).toBe(1);
    } finally {
      await pool.end({ timeout: 1 });
    }
  });

  // Proves a stale handle's release does not hand the connection, reserved again by another caller, back to the
  // pool: a plain query waits for it instead of running inside the other caller's open transaction.
  it("does not let a stale handle release the next owner's connection", async () => {
    const { sql: pool, closes } = onePool();
    try {
      const stale = await pool.reserve();
      await killBackend(stale, closes);
      const other = await within(pool.reserve(), settleMs, "the other reservation");
      await other`begin`;
      await other`insert into handoffs values (8)`;
      stale.release();
      const plain = pool<{ xid: string | null }[]>`select txid_current_if_assigned()::text as xid`.execute();
      await other`commit`;
      other.release();
      const [row] = await within(plain, settleMs, "the plain query");
      expect(row?.xid).toBeNull();
    } finally {
      await pool.end({ timeout: 1 });
    }
  });

  // Proves a reservation queued behind a connection that the server closes settles (porsager/postgres#1195): it
  // gets the reconnected connection, which works, instead of waiting forever and holding its caller's slot.
  it("serves a reservation that was queued while its connection closed", async () => {
    const { sql: pool, closes } = onePool();
    try {
      const holder = await pool.reserve();
      const queued = pool.reserve();
      await killBackend(holder, closes);
      const conn = await within(queued, settleMs, "the queued reservation");
      const [row] = await conn<{ one: number }[]>`select 1 as one`;
      expect(row?.one).toBe(1);
      conn.release();
      holder.release();
    } finally {
      await pool.end({ timeout: 1 });
    }
  });

  // Proves a queued reservation whose reconnect is refused fails, and that the pool does not lose the connection
  // to it: once the database accepts connections again, a reservation and a query both succeed.
  // The reservation's outcome is caught as it is made: its refused reconnect (55000) can arrive while the test
  // still waits for the backend's end, and a rejection with no handler yet would be reported as unhandled.
  it("fails a queued reservation whose reconnect is refused, and keeps the connection for later callers", async () => {
    const { sql: pool, closes } = onePool();
    const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      const holder = await pool.reserve();
      const queued = pool.reserve().then(
        (conn) => conn.release(),
        (e: unknown) => e,
      );
      await admin.unsafe(`alter database "${db.name}" allow_connections false`);
      await killBackend(holder, closes);
      const failed = await within(queued, settleMs, "the queued reservation");
      expect(failed).toBeInstanceOf(Error);
      await admin.unsafe(`alter database "${db.name}" allow_connections true`);
      holder.release();
      const again = await within(pool.reserve(), settleMs, "a later reservation");
      again.release();
      const [row] = await within(pool<{ one: number }[]>`select 1 as one`.execute(), settleMs, "a later query");
      expect(row?.one).toBe(1);
    } finally {
      await admin.unsafe(`alter database "${db.name}" allow_connections true`).catch(() => undefined);
      await admin.end();
      await pool.end({ timeout: 1 });
    }
  });
});

describe("withPipelinedTx", () => {
  it("commits the statements sent behind BEGIN as one transaction, rolls all back on a failure, and returns the connection", async () => {
    const one = createDb(db.url, { max: 1 });
    try {
      await one`create table piped (v int primary key)`;
      const inTx = await withPipelinedTx(one, async (tx) => {
        const [[txid]] = await Promise.all([tx<{ t: string }[]>`select txid_current()::text as t`, tx`insert into piped values (1)`]);
        const [again] = await tx<{ t: string }[]>`select txid_current()::text as t`;
        return txid?.t === again?.t;
      });
      expect(inTx).toBe(true);
      // A failing statement in the batch (the duplicate key) rolls back the one sent beside it.
      await expect(withPipelinedTx(one, async (tx) => Promise.all([tx`insert into piped values (2)`, tx`insert into piped values (1)`]))).rejects.toThrow(
        /duplicate key/,
      );
      await expect(
        withPipelinedTx(one, async (tx) => {
          await tx`insert into piped values (3)`;
          throw new Error("decided against it");
        }),
      ).rejects.toThrow("decided against it");
      // The pool of one got its connection back each time, outside any transaction.
      expect((await one<{ v: number }[]>`select v from piped order by v`).map((r) => r.v)).toEqual([1]);
      const txid = async () => (await one<{ t: string }[]>`select txid_current()::text as t`)[0]?.t;
      expect(await txid()).not.toBe(await txid());
    } finally {
      await one.end();
    }
  });
});
