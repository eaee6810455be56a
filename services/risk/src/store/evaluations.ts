/**
 * SQL of evaluations, their hits and the counters (ADR 0018). An evaluation that counts is recorded in one
 * transaction that first takes a transaction-scoped advisory lock per counter, in ascending order (no deadlock
 * between two evaluations sharing counters), then reads each counter over its window, lets the use case decide, and
 * writes: so two evaluations of one counter never both see room for the last movement.
 */
import { parseCents, type Tenant } from "@treasury/contracts";
import { withTx, writeOutbox, type Sql, type Tx } from "@treasury/service-kit";
import type postgres from "postgres";
import type { CounterNeed } from "../domain/counters.ts";
import type { Evaluation, EvaluationSource, ReviewStatus } from "../domain/evaluations.ts";
import type { CounterState, Hit } from "../domain/rules.ts";
import type { EvaluationRecord, EvaluationStore, PendingEvent, Recorded } from "../usecases/ports.ts";
import { insertAlerts } from "./alerts.ts";

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

async function lockAndRead(tx: Tx, tenant: Tenant, counters: readonly CounterNeed[]): Promise<Map<string, CounterState>> {
  const sorted = [...new Map(counters.map((c) => [c.counter, c])).values()].sort((a, b) => (a.counter < b.counter ? -1 : 1));
  // One round trip for all the locks, taken in the array's (ascending) order as unnest yields it: the locks are held
  // from the first one on, so every round trip saved here is time other evaluations of the counter do not wait.
  const keys = sorted.map((c) => `risk:${tenant.orgId}:${String(tenant.livemode)}:${c.counter}`);
  await tx`select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from unnest(${keys}::text[]) with ordinality as u(k, i)`;
  const rows = await tx<{ counter: string; n: number; amount: string }[]>`
    select n.counter, count(ce.counter)::int as n, coalesce(sum(ce.amount), 0)::text as amount
    from unnest(${sorted.map((c) => c.counter)}::text[], ${sorted.map((c) => c.since.toISOString())}::timestamptz[]) as n(counter, since)
    left join risk.counter_events ce
      on ce.org_id = ${tenant.orgId} and ce.livemode = ${tenant.livemode} and ce.counter = n.counter and ce.at > n.since
    group by n.counter`;
  return new Map(rows.map((r) => [r.counter, { count: r.n, amount: parseCents(r.amount) }]));
}

async function insertEvaluation(tx: Q, e: Evaluation): Promise<boolean> {
  const p = e.proposal;
  const rows = await tx`
    insert into risk.evaluations (id, org_id, livemode, source, key, request_hash, operation, decision, amount, currency, participant_id,
      buyer_id, ip, category, authorizing_instrument_id, expected_date, counterparty_name, review_status, created_at)
    values (${e.id}, ${e.tenant.orgId}, ${e.tenant.livemode}, ${e.source}, ${e.key}, ${e.requestHash}, ${p.operation}, ${e.decision}, ${p.amount},
      ${p.currency}, ${p.participantId ?? null}, ${p.buyerId ?? null}, ${p.ip ?? null}, ${p.category ?? null}, ${p.authorizingInstrumentId ?? null},
      ${p.expectedDate ?? null}, ${p.counterpartyName ?? null}, ${e.review?.status ?? null}, ${e.createdAt})
    on conflict (org_id, livemode, source, key) do nothing
    returning id`;
  return rows.length === 1;
}

async function writeRecord(tx: Tx, rec: EvaluationRecord): Promise<void> {
  const e = rec.evaluation;
  const t = e.tenant;
  if (e.hits.length > 0) {
    const hits = e.hits.map((h, i) => ({
      evaluation_id: e.id,
      ordinal: i,
      org_id: t.orgId,
      livemode: t.livemode,
      policy_id: h.policyId,
      policy_type: h.policyType,
      severity: h.severity,
      reason: h.reason,
    }));
    await tx`insert into risk.evaluation_hits ${tx(hits)}`;
  }
  if (rec.counted.length > 0) {
    const events = rec.counted.map((c) => ({
      org_id: t.orgId,
      livemode: t.livemode,
      counter: c.counter,
      at: e.createdAt,
      amount: e.proposal.amount,
      evaluation_id: e.id,
    }));
    await tx`insert into risk.counter_events ${tx(events)}`;
  }
  if (rec.event !== undefined) await writeEvent(tx, t, rec.event);
  await insertAlerts(tx, e.id, rec.alerts);
}

async function writeEvent(tx: Tx, t: Tenant, event: PendingEvent): Promise<void> {
  await writeOutbox(tx, "risk", { type: event.type, org_id: t.orgId, livemode: t.livemode, data: event.data });
}

export function pgEvaluationStore(sql: Sql): EvaluationStore {
  return {
    findByKey: (t, source, key) => one(sql, sql`e.org_id = ${t.orgId} and e.livemode = ${t.livemode} and e.source = ${source} and e.key = ${key}`),
    get: (t, id) => one(sql, sql`e.id = ${id} and e.org_id = ${t.orgId} and e.livemode = ${t.livemode}`),
    getById: (id) => one(sql, sql`e.id = ${id}`),
    async record(tenant, source, key, counters, decide) {
      const taken = async (q: Q): Promise<Recorded> => {
        const existing = await one(q, q`e.org_id = ${tenant.orgId} and e.livemode = ${tenant.livemode} and e.source = ${source} and e.key = ${key}`);
        if (existing === undefined) throw new Error(`evaluation key ${key} conflicted but is not found`);
        return { evaluation: existing, duplicate: true };
      };
      // Nothing counted and nothing else to write (no policy applied, or none hit without counting): one statement.
      if (counters.length === 0) {
        const rec = decide(new Map());
        if (rec.evaluation.hits.length === 0 && rec.event === undefined && rec.alerts.length === 0) {
          return (await insertEvaluation(sql, rec.evaluation)) ? { evaluation: rec.evaluation, duplicate: false } : taken(sql);
        }
      }
      return withTx(sql, async (tx) => {
        const states = counters.length === 0 ? new Map<string, CounterState>() : await lockAndRead(tx, tenant, counters);
        const rec = decide(states);
        // A concurrent evaluation of the same key waits on the unique key here, then finds it taken.
        if (!(await insertEvaluation(tx, rec.evaluation))) return taken(tx);
        await writeRecord(tx, rec);
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
