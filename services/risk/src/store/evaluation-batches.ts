/**
 * Counting evaluations of one tenant recorded together (ADR 0018, "Group commit"). An org-wide velocity policy is
 * one counter every evaluation of the org takes; recorded one transaction each, they wait in one line for each
 * other's locks, reads, writes and commit, so the org's rate is one over that whole section. Here a process keeps
 * at most two counting transactions in flight per tenant; evaluations that arrive meanwhile wait and go into the
 * next one together. One transaction locks the union of their counters (ascending, as before), reads each counter
 * once, decides the evaluations one after the other in arrival order, each seeing the ones before it as counted,
 * and writes them all: the limit stays exact (the batch is the same serial order the locks would have made). BEGIN,
 * the locks and the reads travel in one round trip, the writes in a second, then COMMIT: the locked section costs
 * two round trips and a commit per batch instead of five round trips per evaluation.
 *
 * Every evaluation's window starts at its own `since`: a counter is read from the earliest start in the batch,
 * with the few movements between the earliest and the latest start listed, so each evaluation subtracts those at
 * or before its own start.
 *
 * A key another replica recorded meanwhile (the same movement retried there) is found after the locks and
 * answered as a duplicate; if one is committed between the read and the insert (its counters differ: policies
 * changed), the insert fails on the key and the batch starts over, so nothing decided on a count that included it is written. A batch PostgreSQL
 * refuses as a whole runs again evaluation by evaluation, so a bad one fails only its own request.
 */
import { parseCents, type Tenant } from "@treasury/contracts";
import type { Tx } from "@treasury/service-kit";
import postgres from "postgres";
import type { CounterNeed } from "../domain/counters.ts";
import type { Evaluation, EvaluationSource } from "../domain/evaluations.ts";
import type { CounterState } from "../domain/rules.ts";
import type { EvaluationRecord, Recorded } from "../usecases/ports.ts";

/** Evaluations of one tenant in one transaction at most; the rest wait for the next. */
const BATCH_MAX = 256;
/**
 * Batches of one tenant in flight at once. The second sends its locks and reads while the first holds the
 * counters: PostgreSQL grants them the moment the first commits, so the next batch's first round trip overlaps
 * the last one's instead of following it.
 */
const IN_FLIGHT_MAX = 2;
/** A batch that met a key committed by another replica between its read and its insert starts over this often. */
const RESTARTS_MAX = 3;

export interface CountingRequest {
  source: EvaluationSource;
  key: string;
  counters: readonly CounterNeed[];
  decide: (states: ReadonlyMap<string, CounterState>) => EvaluationRecord;
}

/** How a store reads and writes what a batch needs, in the batch's transaction. */
export interface BatchSql {
  /** Advisory locks on the counters, then (a later statement: a snapshot taken after the locks) the reads. */
  lockAndRead(tx: Tx, tenant: Tenant, windows: readonly CounterWindow[], keys: readonly string[]): Promise<BatchReads>;
  /**
   * Writes the evaluations (first: the other rows refer to them) with their hits, movements, events and alerts, and
   * the counters' running figures, sent together. Throws KeyTaken when an evaluation's key was recorded meanwhile.
   */
  write(tx: Tx, records: readonly EvaluationRecord[], totals: readonly CounterTotal[]): Promise<void>;
}

/** An evaluation's key was recorded by another transaction between the batch's read and its write. */
export class KeyTaken extends Error {}

/** A counter's figures over (since, now]: what the next batch starts from (migrations/0003_counter_totals.sql). */
export interface CounterTotal {
  counter: string;
  since: Date;
  count: number;
  amount: bigint;
}

export interface CounterWindow {
  counter: string;
  /** The earliest window start of the batch: the base figures count movements after it. */
  from: Date;
  /** The latest window start: movements in (from, to] are listed one by one. */
  to: Date;
}

export interface BatchReads {
  /** Each counter's figures after its window's `from`. */
  base: Map<string, CounterState>;
  /** Movements in each counter's (from, to], for evaluations whose window starts later than the earliest. */
  edge: Map<string, { at: Date; amount: bigint }[]>;
  /** Evaluations already recorded under the batch's keys, by `source:key`. */
  existing: Map<string, Evaluation>;
}

interface Waiting {
  request: CountingRequest;
  resolve: (r: Recorded) => void;
  reject: (e: unknown) => void;
}

const keyOf = (source: EvaluationSource, key: string) => `${source}:${key}`;
const tenantKey = (t: Tenant) => `${t.orgId}:${String(t.livemode)}`;

export class CountingBatches {
  private readonly queues = new Map<string, { tenant: Tenant; waiting: Waiting[] }>();
  /** Batches of each tenant in flight. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    /** Runs a function in a transaction (withPipelinedTx on the service's pool). */
    private readonly inTx: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>,
    private readonly q: BatchSql,
  ) {}

  submit(tenant: Tenant, request: CountingRequest): Promise<Recorded> {
    return new Promise<Recorded>((resolve, reject) => {
      const k = tenantKey(tenant);
      const queue = this.queues.get(k) ?? { tenant, waiting: [] };
      queue.waiting.push({ request, resolve, reject });
      this.queues.set(k, queue);
      const running = this.inFlight.get(k) ?? 0;
      // Evaluations that arrived in the same read from the socket go into one batch together.
      if (running < IN_FLIGHT_MAX) {
        this.inFlight.set(k, running + 1);
        setImmediate(() => void this.drain(k));
      }
    });
  }

  /** Runs batches of the tenant one after the other while evaluations wait. */
  private async drain(k: string): Promise<void> {
    for (;;) {
      const queue = this.queues.get(k);
      if (queue === undefined || queue.waiting.length === 0) {
        const running = (this.inFlight.get(k) ?? 1) - 1;
        if (running > 0) this.inFlight.set(k, running);
        else {
          this.inFlight.delete(k);
          this.queues.delete(k);
        }
        return;
      }
      const batch = queue.waiting.splice(0, BATCH_MAX);
      await this.runBatch(queue.tenant, batch);
    }
  }

  private async runBatch(tenant: Tenant, batch: readonly Waiting[]): Promise<void> {
    try {
      const out = await this.record(
        tenant,
        batch.map((w) => w.request),
      );
      batch.forEach((w, i) => w.resolve(out[i] as Recorded));
    } catch (e) {
      if (batch.length === 1 || !(e instanceof postgres.PostgresError)) {
        for (const w of batch) w.reject(e);
        return;
      }
      for (const w of batch) await this.record(tenant, [w.request]).then(([r]) => w.resolve(r as Recorded), w.reject);
    }
  }

  private async record(tenant: Tenant, requests: readonly CountingRequest[]): Promise<Recorded[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.inTx((tx) => this.recordIn(tx, tenant, requests));
      } catch (e) {
        if (!(e instanceof KeyTaken) || attempt >= RESTARTS_MAX) throw e;
      }
    }
  }

  private async recordIn(tx: Tx, tenant: Tenant, requests: readonly CountingRequest[]): Promise<Recorded[]> {
    const windows = windowsOf(requests);
    const reads = await this.q.lockAndRead(tx, tenant, windows, [...new Set(requests.map((r) => keyOf(r.source, r.key)))]);
    const { decided, counted } = decideInOrder(requests, reads);
    const fresh = [...new Map(decided.filter((d) => d.record !== undefined).map((d) => [d.record!.evaluation.id, d.record!])).values()];
    if (fresh.length > 0) await this.q.write(tx, fresh, totalsAfter(windows, reads, counted));
    return decided.map((d) => d.recorded);
  }
}

function windowsOf(requests: readonly CountingRequest[]): CounterWindow[] {
  const byCounter = new Map<string, CounterWindow>();
  for (const need of requests.flatMap((r) => r.counters)) {
    const w = byCounter.get(need.counter);
    if (w === undefined) byCounter.set(need.counter, { counter: need.counter, from: need.since, to: need.since });
    else {
      if (need.since < w.from) w.from = need.since;
      if (need.since > w.to) w.to = need.since;
    }
  }
  return [...byCounter.values()].sort((a, b) => (a.counter < b.counter ? -1 : 1));
}

interface Decided {
  recorded: Recorded;
  /** What this request writes; undefined for a duplicate. */
  record: EvaluationRecord | undefined;
}

/**
 * Decides the batch in arrival order: each evaluation sees the counters as read, less the listed movements at or
 * before its window's start, plus what the evaluations before it in the batch counted. A key met twice in the
 * batch is decided once; the second answer is the first's, as a duplicate.
 */
function decideInOrder(requests: readonly CountingRequest[], reads: BatchReads): { decided: Decided[]; counted: Counted } {
  const counted: Counted = new Map();
  const byKey = new Map(reads.existing);
  const decided = requests.map((r): Decided => {
    const k = keyOf(r.source, r.key);
    const seen = byKey.get(k);
    if (seen !== undefined) return { recorded: { evaluation: seen, duplicate: true }, record: undefined };
    const rec = r.decide(statesFor(r.counters, reads, counted));
    byKey.set(k, rec.evaluation);
    for (const c of rec.counted) {
      const list = counted.get(c.counter) ?? [];
      list.push({ at: rec.evaluation.createdAt, amount: BigInt(rec.evaluation.proposal.amount) });
      counted.set(c.counter, list);
    }
    return { recorded: { evaluation: rec.evaluation, duplicate: false }, record: rec };
  });
  return { decided, counted };
}

/** Movements the batch counted, by counter. */
type Counted = Map<string, { at: Date; amount: bigint }[]>;

/** Each counter's figures after its `from` once the batch is written: as read, plus what the batch counted. */
function totalsAfter(windows: readonly CounterWindow[], reads: BatchReads, counted: Counted): CounterTotal[] {
  return windows.map((w) => {
    const base = reads.base.get(w.counter) ?? { count: 0, amount: 0 };
    const added = counted.get(w.counter) ?? [];
    return {
      counter: w.counter,
      since: w.from,
      count: base.count + added.length,
      amount: added.reduce((sum, m) => sum + m.amount, BigInt(base.amount)),
    };
  });
}

function statesFor(
  needs: readonly CounterNeed[],
  reads: BatchReads,
  counted: ReadonlyMap<string, readonly { at: Date; amount: bigint }[]>,
): Map<string, CounterState> {
  const states = new Map<string, CounterState>();
  for (const need of needs) {
    const base = reads.base.get(need.counter) ?? { count: 0, amount: 0 };
    let count = base.count;
    let amount = BigInt(base.amount);
    for (const m of reads.edge.get(need.counter) ?? []) {
      if (m.at <= need.since) {
        count -= 1;
        amount -= m.amount;
      }
    }
    for (const m of counted.get(need.counter) ?? []) {
      if (m.at > need.since) {
        count += 1;
        amount += m.amount;
      }
    }
    states.set(need.counter, { count, amount: parseCents(amount) });
  }
  return states;
}
