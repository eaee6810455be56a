// The batcher's own rules, on a fake of its SQL: evaluations of a tenant arriving together share one
// transaction and are decided in arrival order, each seeing what the ones before it counted; each window starts
// at its own `since`; a key met twice is decided once; a key committed elsewhere between the read and the insert
// starts the batch over, so nothing decided on the stale count is written.
import type { Tx } from "@treasury/service-kit";
import { parseCents } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { proposal } from "../../test/proposal.ts";
import type { CounterNeed } from "../domain/counters.ts";
import type { Evaluation } from "../domain/evaluations.ts";
import type { CounterState } from "../domain/rules.ts";
import type { EvaluationRecord } from "../usecases/ports.ts";
import { CountingBatches, KeyTaken, type BatchReads, type BatchSql, type CounterWindow } from "./evaluation-batches.ts";

const tenant = { orgId: "org_1", livemode: false };
const T0 = Date.parse("2026-11-01T12:00:00Z");

function evaluation(key: string, at: number, amount = 100): Evaluation {
  return {
    id: `feval_${key}`,
    tenant,
    source: "internal",
    key,
    requestHash: "h",
    decision: "allow",
    proposal: proposal({ operation: "checkout", amount: parseCents(amount) }),
    hits: [],
    review: null,
    createdAt: new Date(at),
  };
}

/** A movement limited to `max` in the counter's window: counts when there is room, denied otherwise. */
function limited(key: string, need: CounterNeed, max: number, seen: CounterState[], at = T0) {
  return {
    source: "internal" as const,
    key,
    counters: [need],
    decide: (states: ReadonlyMap<string, CounterState>): EvaluationRecord => {
      const s = states.get(need.counter) ?? { count: 0, amount: 0 };
      seen.push(s);
      const e = evaluation(key, at);
      return s.count < max
        ? { evaluation: e, counted: [need], event: undefined, alerts: [] }
        : { evaluation: { ...e, decision: "deny" }, counted: [], event: undefined, alerts: [] };
    },
  };
}

class FakeSql implements BatchSql {
  transactions = 0;
  windows: CounterWindow[][] = [];
  written: EvaluationRecord[] = [];
  /** Keys the "database" already holds, and keys another replica commits just before this batch's insert. */
  existing = new Map<string, Evaluation>();
  committedElsewhere = new Map<string, Evaluation>();
  constructor(private readonly reads: Omit<BatchReads, "existing">) {}

  async lockAndRead(_tx: Tx, _t: unknown, windows: readonly CounterWindow[], keys: readonly string[]): Promise<BatchReads> {
    this.windows.push([...windows]);
    return { ...this.reads, existing: new Map([...this.existing].filter(([k]) => keys.includes(k))) };
  }
  async write(_tx: Tx, records: readonly EvaluationRecord[]): Promise<void> {
    for (const [k, e] of this.committedElsewhere) this.existing.set(k, e);
    this.committedElsewhere.clear();
    if (records.some((r) => this.existing.has(`${r.evaluation.source}:${r.evaluation.key}`))) throw new KeyTaken("taken");
    this.written.push(...records);
  }
}

function batches(fake: FakeSql) {
  return new CountingBatches(async (fn) => {
    fake.transactions += 1;
    return fn(undefined as unknown as Tx);
  }, fake);
}

const need = (since: number): CounterNeed => ({ policyId: "fpol_1", counter: "fpol_1:org_1", since: new Date(since) });

describe("CountingBatches", () => {
  it("decides a tenant's evaluations arriving together in one transaction, in order, exactly at the limit", async () => {
    const fake = new FakeSql({ base: new Map([["fpol_1:org_1", { count: 2, amount: 200 }]]), edge: new Map() });
    const b = batches(fake);
    const seen: CounterState[] = [];
    const out = await Promise.all(Array.from({ length: 6 }, (_, i) => b.submit(tenant, limited(`k${i}`, need(T0 - 60_000), 5, seen))));
    expect(fake.transactions).toBe(1);
    expect(seen.map((s) => s.count)).toEqual([2, 3, 4, 5, 5, 5]);
    expect(out.map((r) => r.evaluation.decision)).toEqual(["allow", "allow", "allow", "deny", "deny", "deny"]);
    expect(fake.written).toHaveLength(6);
    expect(fake.written.flatMap((r) => r.counted)).toHaveLength(3);
  });

  it("starts each window at its own since: edge movements and earlier evaluations of the batch count only when inside it", async () => {
    const c = "fpol_1:org_1";
    const fake = new FakeSql({ base: new Map([[c, { count: 3, amount: 300 }]]), edge: new Map([[c, [{ at: new Date(T0 - 30_000), amount: 100n }]]]) });
    const b = batches(fake);
    const seen: CounterState[] = [];
    await Promise.all([
      b.submit(tenant, limited("early", need(T0 - 60_000), 99, seen, T0 - 20_000)),
      // Its window starts after the edge movement and after the first evaluation of the batch.
      b.submit(tenant, limited("late", need(T0 - 10_000), 99, seen)),
    ]);
    expect(fake.windows[0]).toEqual([{ counter: c, from: new Date(T0 - 60_000), to: new Date(T0 - 10_000) }]);
    expect(seen).toEqual([
      { count: 3, amount: 300 },
      { count: 2, amount: 200 },
    ]);
  });

  it("decides a key met twice in a batch once, and answers a key recorded before as a duplicate", async () => {
    const fake = new FakeSql({ base: new Map(), edge: new Map() });
    fake.existing.set("internal:old", evaluation("old", T0));
    const b = batches(fake);
    const seen: CounterState[] = [];
    const out = await Promise.all(["k", "k", "old"].map((k) => b.submit(tenant, limited(k, need(T0 - 60_000), 5, seen))));
    expect(out.map((r) => r.duplicate)).toEqual([false, true, true]);
    expect(out[1]?.evaluation.id).toBe(out[0]?.evaluation.id);
    expect(seen).toHaveLength(1);
    expect(fake.written.map((r) => r.evaluation.key)).toEqual(["k"]);
  });

  it("starts over when another replica commits one of its keys between the read and the insert", async () => {
    const fake = new FakeSql({ base: new Map(), edge: new Map() });
    fake.committedElsewhere.set("internal:k1", evaluation("k1", T0));
    const b = batches(fake);
    const seen: CounterState[] = [];
    const out = await Promise.all(["k1", "k2"].map((k) => b.submit(tenant, limited(k, need(T0 - 60_000), 5, seen))));
    expect(fake.transactions).toBe(2);
    expect(out.map((r) => r.duplicate)).toEqual([true, false]);
    // The second try saw k1 as recorded, so k2 was decided without counting it in the batch.
    expect(seen.map((s) => s.count)).toEqual([0, 1, 0]);
    expect(fake.written.map((r) => r.evaluation.key)).toEqual(["k2"]);
  });

  it("keeps two batches of a tenant in flight; what arrives meanwhile waits and goes in one batch", async () => {
    const fake = new FakeSql({ base: new Map(), edge: new Map() });
    let open = 0;
    let mostOpen = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const b = new CountingBatches(async (fn) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      fake.transactions += 1;
      await gate;
      const out = await fn(undefined as unknown as Tx);
      open -= 1;
      return out;
    }, fake);
    const turn = () => new Promise((r) => setImmediate(r));
    const seen: CounterState[] = [];
    const submit = (k: string) => b.submit(tenant, limited(k, need(T0 - 60_000), 99, seen));
    const first = submit("a");
    await turn();
    const second = submit("b");
    await turn();
    const rest = ["c", "d", "e"].map(submit);
    await turn();
    expect(fake.transactions).toBe(2);
    release();
    await Promise.all([first, second, ...rest]);
    expect(mostOpen).toBe(2);
    expect(fake.transactions).toBe(3);
    // The fake keeps nothing between transactions: c, d and e see each other, so they were one batch.
    expect(seen.map((s) => s.count)).toEqual([0, 0, 0, 1, 2]);
  });
});
