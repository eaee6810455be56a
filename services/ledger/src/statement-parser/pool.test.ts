import { StatementError } from "@treasury/bank-statements";
import { DomainError } from "@treasury/contracts";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { StatementParserPool, type ParserPoolOptions } from "./pool.ts";
import { ENDLESS_STATEMENT, ENDLESS_WORKER_URL } from "./testing/endless.ts";

const log = pino({ level: "silent" });
const CSV = "Date,Amount\n2024-01-01,1.50\n2024-01-02,-0.25\n";
const MAPPING = { date: "Date", amount: "Amount", currency: "EUR" };
/** Far beyond any answer here: a reply that has not come by then has not come. */
const farDeadline = () => Date.now() + 120_000;

let pools: StatementParserPool[] = [];
function pool(opts: Partial<ParserPoolOptions>): StatementParserPool {
  const p = new StatementParserPool({ workers: 1, budgetMs: 30_000, log, ...opts });
  pools.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e as Error,
  );
}

describe("statement parser pool", () => {
  it("reads a statement on a worker thread; a statement the library refuses is its StatementError", async () => {
    // Proves the worker answers with the library's result and errors, bytes and text alike.
    const p = pool({});
    await p.ready();
    const text = await p.parse(CSV, { format: "csv", mapping: MAPPING }, farDeadline());
    expect(text.statements[0]?.transactions.map((t) => t.amount)).toEqual([150, -25]);
    const bytes = await p.parse(Buffer.from(CSV), { format: "csv", mapping: MAPPING }, farDeadline());
    expect(bytes).toEqual(text);
    const refused = await rejection(p.parse(`${CSV}2024-01-03,abc\n`, { format: "csv", mapping: MAPPING }, farDeadline()));
    expect(refused).toBeInstanceOf(StatementError);
    expect([(refused as StatementError).code, (refused as StatementError).details.line]).toEqual(["invalid_statement", 4]);
  });

  it("a statement past its budget answers statement_too_complex while the event loop keeps turning; a new worker reads the next", async () => {
    // Proves the budget ends a busy worker (nothing on this thread waits for it) and the pool replaces it.
    const budgetMs = 1_000;
    const p = pool({ budgetMs, workerUrl: ENDLESS_WORKER_URL });
    await p.ready();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    const started = performance.now();
    const err = await rejection(p.parse(ENDLESS_STATEMENT, { format: "csv", mapping: MAPPING }, farDeadline()));
    const elapsed = performance.now() - started;
    clearInterval(ticker);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("statement_too_complex");
    expect(elapsed).toBeGreaterThanOrEqual(budgetMs - 5);
    // A blocked event loop would not have ticked while the worker spun (at most once, after it); a loaded machine
    // may tick far less often than every 10 ms, but several times within the budget.
    expect(ticks).toBeGreaterThanOrEqual(3);
    const next = await p.parse(CSV, { format: "csv", mapping: MAPPING }, farDeadline());
    expect(next.statements[0]?.transactions).toHaveLength(2);
  });

  it("sheds statements past its queue, and those whose caller gave up while they waited, with service_unavailable", async () => {
    // Proves the limits on waiting: a full queue and a passed deadline answer at once, retryably.
    const p = pool({ queueMax: 1, workerUrl: ENDLESS_WORKER_URL, budgetMs: 60_000 });
    await p.ready();
    const busy = rejection(p.parse(ENDLESS_STATEMENT, { format: "csv", mapping: MAPPING }, farDeadline()));
    const waiting = rejection(p.parse(CSV, { format: "csv", mapping: MAPPING }, Date.now() - 1));
    const shed = await rejection(p.parse(CSV, { format: "csv", mapping: MAPPING }, farDeadline()));
    expect((shed as DomainError).code).toBe("service_unavailable");
    await p.close();
    expect(((await busy) as DomainError).code).toBe("service_unavailable");
    expect(((await waiting) as DomainError).code).toBe("service_unavailable");
  });
});
