/**
 * SQL of evaluations, their hits and the counters (ADR 0018). Evaluations that count are recorded in batches per
 * tenant (evaluation-batches.ts): a transaction that first takes a transaction-scoped advisory lock per counter, in
 * ascending order (no deadlock between two transactions sharing counters), then reads each counter over its
 * window (from its running figures, risk.counter_totals), lets the use case decide each evaluation, and writes: so
 * two evaluations of one counter never both see room for the last movement.
 */
import { parseCents, type Tenant } from "@treasury/contracts";
import { withPipelinedTx, withTx, writeOutbox, type Sql, type Tx } from "@treasury/service-kit";
import postgres from "postgres";
import type { Evaluation, EvaluationSource, ReviewStatus } from "../domain/evaluations.ts";
import type { Hit } from "../domain/rules.ts";
import type { EvaluationRecord, EvaluationStore, PendingEvent, Recorded } from "../usecases/ports.ts";
import { insertAlerts } from "./alerts.ts";
import { CountingBatches, KeyTaken, type BatchReads, type CounterTotal, type CounterWindow } from "./evaluation-batches.ts";

interface Row {
  id: string;
  org_id: string;
  livemode: boolean;
  source: EvaluationSource;
  key: string;
  request_hash: string;
  operation: Evaluation["proposal"]["operation"];
  decision: Evaluation["decision"];
  amount: string;
  currency: string;
  participant_id: string | null;
  buyer_id: string | null;
  ip: string | null;
  category: string | null;
  authorizing_instrument_id: string | null;
  expected_date: string | null;
  counterparty_name: string | null;
  review_status: ReviewStatus | null;
  review_actor: string | null;
  review_reason: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  hits: Array<{ policy_id: string; policy_type: Hit["policyType"]; severity: Hit["severity"]; reason: string }>;
}

const u = (v: string | null): string | undefined => v ?? undefined;

function evaluationOf(r: Row): Evaluation {
  return {
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    source: r.source,
    key: r.key,
    requestHash: r.request_hash,
    decision: r.decision,
    proposal: {
      operation: r.operation,
      amount: parseCents(r.amount),
      currency: r.currency,
      participantId: u(r.participant_id),
      buyerId: u(r.buyer_id),
      ip: u(r.ip),
      category: u(r.category),
      authorizingInstrumentId: u(r.authorizing_instrument_id),
      expectedDate: u(r.expected_date),
      counterpartyName: u(r.counterparty_name),
      bankAccountUpdatedAt: undefined,
    },
    hits: r.hits.map((h) => ({ policyId: h.policy_id, policyType: h.policy_type, severity: h.severity, reason: h.reason })),
    review: r.review_status === null ? null : { status: r.review_status, actor: r.review_actor, reason: r.review_reason, decidedAt: r.reviewed_at },
    createdAt: r.created_at,
  };
}

type Q = Sql | Tx;

/** Evaluations with their hits, by a condition on `e`. */
function selectEvaluations(q: Q, where: postgres.PendingQuery<postgres.Row[]>, tail: postgres.PendingQuery<postgres.Row[]> = q``) {
  return q<Row[]>`
    select e.*, coalesce(h.hits, '[]'::json) as hits from risk.evaluations e
    left join lateral (
      select json_agg(json_build_object('policy_id', policy_id, 'policy_type', policy_type, 'severity', severity, 'reason', reason) order by ordinal) as hits
      from risk.evaluation_hits where evaluation_id = e.id
    ) h on true
    where ${where} ${tail}`;
}

async function one(q: Q, where: postgres.PendingQuery<postgres.Row[]>): Promise<Evaluation | undefined> {
  const [row] = await selectEvaluations(q, where);
  return row === undefined ? undefined : evaluationOf(row);
}

/** The batch's locks (ascending, one round trip) and then its reads, sent together: one round trip in all. */
async function lockAndRead(tx: Tx, tenant: Tenant, windows: readonly CounterWindow[], keys: readonly string[]): Promise<BatchReads> {
  const locks = windows.map((w) => `risk:${tenant.orgId}:${String(tenant.livemode)}:${w.counter}`);
  const counters = windows.map((w) => w.counter);
  // Sent first, explicitly: the reads must run after it (each statement takes its snapshot when it starts).
  const locked = tx`select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from unnest(${locks}::text[]) with ordinality as u(k, i)`.execute();
  const [, base, edge, existing] = await Promise.all([
    locked,
    // From the running figures less what left the window since they were kept, or, for a counter without them
    // or read again after a pause, from the events (each branch is a one-time filter: only one of them runs).
    tx<{ counter: string; n: number; amount: string }[]>`
      select w.counter, coalesce(t.n - gone.n, whole.n, 0)::int as n, coalesce(t.amount - gone.amount, whole.amount, 0)::text as amount
      from unnest(${counters}::text[], ${windows.map((w) => w.from.toISOString())}::timestamptz[]) as w(counter, since)
      left join risk.counter_totals t on t.org_id = ${tenant.orgId} and t.livemode = ${tenant.livemode} and t.counter = w.counter
        and w.since >= t.since and w.since - t.since <= ${RECOUNT_AFTER}::interval
      left join lateral (
        select count(*) as n, coalesce(sum(ce.amount), 0) as amount from risk.counter_events ce
        where t.counter is not null and ce.org_id = ${tenant.orgId} and ce.livemode = ${tenant.livemode} and ce.counter = w.counter
          and ce.at > t.since and ce.at <= w.since
      ) gone on true
      left join lateral (
        select count(*) as n, coalesce(sum(ce.amount), 0) as amount from risk.counter_events ce
        where t.counter is null and ce.org_id = ${tenant.orgId} and ce.livemode = ${tenant.livemode} and ce.counter = w.counter and ce.at > w.since
      ) whole on true`,
    tx<{ counter: string; at: Date; amount: string }[]>`
      select ce.counter, ce.at, ce.amount::text as amount
      from unnest(${counters}::text[], ${windows.map((w) => w.from.toISOString())}::timestamptz[], ${windows.map((w) => w.to.toISOString())}::timestamptz[])
        as w(counter, since, until)
      join risk.counter_events ce
        on ce.org_id = ${tenant.orgId} and ce.livemode = ${tenant.livemode} and ce.counter = w.counter and ce.at > w.since and ce.at <= w.until`,
    selectEvaluations(
      tx,
      tx`e.org_id = ${tenant.orgId} and e.livemode = ${tenant.livemode} and e.source = any(${[...new Set(keys.map(sourceOf))]}::text[])
        and e.key = any(${keys.map(keyPart)}::text[])`,
    ),
  ]);
  const edges = new Map<string, { at: Date; amount: bigint }[]>();
  for (const r of edge) edges.set(r.counter, [...(edges.get(r.counter) ?? []), { at: r.at, amount: BigInt(r.amount) }]);
  return {
    base: new Map(base.map((r) => [r.counter, { count: r.n, amount: parseCents(r.amount) }])),
    edge: edges,
    existing: new Map(existing.map(evaluationOf).map((e) => [`${e.source}:${e.key}`, e])),
  };
}

/**
 * Running figures older than this are not brought up to date by subtracting what left the window (that could
 * reach movements the retention sweep removed): the counter is counted again from its events, once.
 */
const RECOUNT_AFTER = "1 day";

/** Batch keys are `source:key`; a source has no colon. */
const sourceOf = (k: string) => k.slice(0, k.indexOf(":"));
const keyPart = (k: string) => k.slice(k.indexOf(":") + 1);

function evaluationRow(e: Evaluation) {
  const p = e.proposal;
  return {
    id: e.id,
    org_id: e.tenant.orgId,
    livemode: e.tenant.livemode,
    source: e.source,
    key: e.key,
    request_hash: e.requestHash,
    operation: p.operation,
    decision: e.decision,
    amount: p.amount,
    currency: p.currency,
    participant_id: p.participantId ?? null,
    buyer_id: p.buyerId ?? null,
    ip: p.ip ?? null,
    category: p.category ?? null,
    authorizing_instrument_id: p.authorizingInstrumentId ?? null,
    expected_date: p.expectedDate ?? null,
    counterparty_name: p.counterpartyName ?? null,
    review_status: e.review?.status ?? null,
    created_at: e.createdAt,
  };
}

/** Inserts evaluations; answers the ids inserted (a key recorded meanwhile is not: the unique key waits, then skips). */
async function insertEvaluations(q: Q, evaluations: readonly Evaluation[]): Promise<Set<string>> {
  const rows = await q<{ id: string }[]>`
    insert into risk.evaluations ${q(evaluations.map(evaluationRow))}
    on conflict (org_id, livemode, source, key) do nothing
    returning id`;
  return new Set(rows.map((r) => r.id));
}

/**
 * A batch's writes, sent together: the evaluations first (the other rows refer to them), plainly inserted, so a
 * key recorded meanwhile fails the batch (KeyTaken: it starts over) instead of leaving its hits without a row.
 */
async function writeBatch(tx: Tx, records: readonly EvaluationRecord[], totals: readonly CounterTotal[]): Promise<void> {
  const inserted = tx`insert into risk.evaluations ${tx(records.map((r) => evaluationRow(r.evaluation)))}`.execute();
  try {
    await Promise.all([inserted, writeRest(tx, records, totals)]);
  } catch (e) {
    if (e instanceof postgres.PostgresError && e.code === UNIQUE_VIOLATION && e.constraint_name === "evaluations_key_uq") throw new KeyTaken(e.message);
    throw e;
  }
}

const UNIQUE_VIOLATION = "23505";

/** The hits, counter movements, events and alerts of recorded evaluations: one statement per table. */
async function writeRest(tx: Tx, records: readonly EvaluationRecord[], totals: readonly CounterTotal[] = []): Promise<void> {
  const hits = records.flatMap(({ evaluation: e }) =>
    e.hits.map((h, i) => ({
      evaluation_id: e.id,
      ordinal: i,
      org_id: e.tenant.orgId,
      livemode: e.tenant.livemode,
      policy_id: h.policyId,
      policy_type: h.policyType,
      severity: h.severity,
      reason: h.reason,
    })),
  );
  const movements = records.flatMap(({ evaluation: e, counted }) =>
    counted.map((c) => ({
      org_id: e.tenant.orgId,
      livemode: e.tenant.livemode,
      counter: c.counter,
      at: e.createdAt,
      amount: e.proposal.amount,
      evaluation_id: e.id,
    })),
  );
  await Promise.all([
    hits.length > 0 ? tx`insert into risk.evaluation_hits ${tx(hits)}` : undefined,
    movements.length > 0 ? tx`insert into risk.counter_events ${tx(movements)}` : undefined,
    ...records.map((r) => (r.event === undefined ? undefined : writeEvent(tx, r.evaluation.tenant, r.event))),
    ...records.map((r) => insertAlerts(tx, r.evaluation.id, r.alerts)),
    totals.length > 0 ? upsertTotals(tx, records[0]!.evaluation.tenant, totals) : undefined,
  ]);
}

async function upsertTotals(tx: Tx, t: Tenant, totals: readonly CounterTotal[]): Promise<void> {
  const rows = totals.map((c) => ({ org_id: t.orgId, livemode: t.livemode, counter: c.counter, since: c.since, n: c.count, amount: c.amount.toString() }));
  await tx`
    insert into risk.counter_totals ${tx(rows)}
    on conflict (org_id, livemode, counter) do update set since = excluded.since, n = excluded.n, amount = excluded.amount`;
}

async function writeEvent(tx: Tx, t: Tenant, event: PendingEvent): Promise<void> {
  await writeOutbox(tx, "risk", { type: event.type, org_id: t.orgId, livemode: t.livemode, data: event.data });
}

/** The evaluation a key was recorded with, found after the insert met it. */
async function taken(q: Q, tenant: Tenant, source: EvaluationSource, key: string): Promise<Recorded> {
  const existing = await one(q, q`e.org_id = ${tenant.orgId} and e.livemode = ${tenant.livemode} and e.source = ${source} and e.key = ${key}`);
  if (existing === undefined) throw new Error(`evaluation key ${key} conflicted but is not found`);
  return { evaluation: existing, duplicate: true };
}

export function pgEvaluationStore(sql: Sql): EvaluationStore {
  const batches = new CountingBatches((fn) => withPipelinedTx(sql, fn), { lockAndRead, write: writeBatch });
  return {
    get: (t, id) => one(sql, sql`e.id = ${id} and e.org_id = ${t.orgId} and e.livemode = ${t.livemode}`),
    getById: (id) => one(sql, sql`e.id = ${id}`),
    async record(tenant, source, key, counters, decide) {
      // Counting evaluations of a tenant go through its batches; the rest write at most their row and hits.
      if (counters.length > 0) return batches.submit(tenant, { source, key, counters, decide });
      const rec = decide(new Map());
      if (rec.evaluation.hits.length === 0 && rec.event === undefined && rec.alerts.length === 0) {
        if ((await insertEvaluations(sql, [rec.evaluation])).size === 1) return { evaluation: rec.evaluation, duplicate: false };
        return taken(sql, tenant, source, key);
      }
      return withTx(sql, async (tx) => {
        // A concurrent evaluation of the same key waits on the unique key here, then finds it taken.
        if ((await insertEvaluations(tx, [rec.evaluation])).size === 0) return taken(tx, tenant, source, key);
        await writeRest(tx, [rec]);
        return { evaluation: rec.evaluation, duplicate: false };
      });
    },
    async reviewQueue(f) {
      const rows = await selectEvaluations(
        sql,
        sql`e.review_status = ${f.status} and (${f.orgId ?? null}::text is null or e.org_id = ${f.orgId ?? null})
          and (${f.livemode ?? null}::boolean is null or e.livemode = ${f.livemode ?? null})`,
        sql`order by e.created_at, e.id limit ${f.limit}`,
      );
      return rows.map(evaluationOf);
    },
    async decide(id, decision, by, event) {
      return withTx(sql, async (tx) => {
        const updated = await tx`
          update risk.evaluations set review_status = ${decision}, review_actor = ${by.actor}, review_reason = ${by.reason}, reviewed_at = ${by.at}
          where id = ${id} and review_status = 'pending' returning id`;
        if (updated.length === 0) return undefined;
        const decided = await one(tx, tx`e.id = ${id}`);
        if (decided === undefined) throw new Error(`evaluation ${id} vanished in its own transaction`);
        await writeEvent(tx, decided.tenant, event(decided));
        return decided;
      });
    },
  };
}

/** Counter rows older than every window (velocity: 31 days; budgets: a year) are swept. */
export async function purgeCounterEvents(sql: Sql, before: Date, batchMax: number): Promise<number> {
  const rows = await sql`
    delete from risk.counter_events where ctid in (select ctid from risk.counter_events where at < ${before} limit ${batchMax})`;
  return rows.count;
}
