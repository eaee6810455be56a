// Proves a Coalescer runs the items of one event-loop turn as one statement on a real PostgreSQL, answers each
// caller its own row, runs a batch the server refused item by item (a bad item fails only itself), and fails
// every item of a batch whose outcome is unknown (a lost connection) without running any again.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Coalescer } from "./coalesce.ts";
import { createDb } from "./db.ts";
import type { Sql } from "./db.ts";
import { createTestDatabase } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = createDb(db.url, { max: 4 });
  await sql`create table claims (id text primary key, ref text unique not null, amount int not null check (amount > 0))`;
});

afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

interface Claim {
  id: string;
  ref: string;
  amount: number;
}

let ids = 0;
const claim = (ref: string, amount: number): Claim => ({ id: `cl_${++ids}`, ref, amount });

/** Inserts claims; a taken ref answers undefined (matched by each item's own id). Counts the statements it sends. */
function claimer(q: Sql) {
  const calls: number[] = [];
  const coalescer = new Coalescer<Claim, Claim | undefined>(async (items) => {
    calls.push(items.length);
    const rows = await q<Claim[]>`
      insert into claims (id, ref, amount)
      select * from jsonb_to_recordset(${q.json(items as unknown as postgres.JSONValue)}) as c(id text, ref text, amount int)
      on conflict (ref) do nothing returning id, ref, amount`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    return items.map((i) => byId.get(i.id));
  }, 8);
  return { coalescer, calls };
}

describe("Coalescer", () => {
  it("runs one turn's items as batches of at most sizeMax, and answers each caller its own row", async () => {
    const { coalescer, calls } = claimer(sql);
    const items = Array.from({ length: 20 }, (_, i) => claim(`a${i}`, i + 1));
    const answers = await Promise.all(items.map((c) => coalescer.submit(c)));
    expect(answers).toEqual(items);
    expect(calls).toEqual([8, 8, 4]);
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from claims where ref like 'a%'`;
    expect(row?.n).toBe(20);
  });

  it("answers a duplicate within one batch as taken, once", async () => {
    const { coalescer, calls } = claimer(sql);
    const answers = await Promise.all([coalescer.submit(claim("d1", 5)), coalescer.submit(claim("d1", 6))]);
    expect(calls).toEqual([2]);
    expect(answers.filter((a) => a !== undefined)).toHaveLength(1);
  });

  it("runs a batch the server refused item by item, so only the bad item fails", async () => {
    const { coalescer, calls } = claimer(sql);
    const results = await Promise.allSettled([coalescer.submit(claim("b1", 1)), coalescer.submit(claim("b2", -1)), coalescer.submit(claim("b3", 3))]);
    expect(calls).toEqual([3, 1, 1, 1]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(postgres.PostgresError);
    const rows = await sql<{ ref: string }[]>`select ref from claims where ref like 'b%' order by ref`;
    expect(rows.map((r) => r.ref)).toEqual(["b1", "b3"]);
  });

  it("fails every item of a batch whose connection is gone, and runs none of them again", async () => {
    const closed = createDb(db.url, { max: 1 });
    await closed.end();
    const { coalescer, calls } = claimer(closed);
    const results = await Promise.allSettled([coalescer.submit(claim("c1", 1)), coalescer.submit(claim("c2", 2))]);
    expect(calls).toEqual([2]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  });
});
