/** SQL of payout schedules (one per participant, org and environment) and of what each scheduled run did. */
import type { Tenant } from "@treasury/contracts";
import { outboxRowValues, wakeOutboxRelay } from "@treasury/service-kit";
import type postgres from "postgres";
import type { DueCutoff, ScheduleKey, ScheduleOutcome, SchedulePeriod, ScheduleRow, ScheduleRun, ScheduleStore, ScheduleValues } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

type RawRow = Omit<ScheduleRow, "minimum_amount_cents"> & { minimum_amount_cents: string };

const COLUMNS =
  "org_id, livemode, participant_id, interval, weekly_anchor, monthly_anchor, delay_days, minimum_amount_cents, next_run_at, created_at, updated_at";

const keyOf = (k: ScheduleKey): string => `${k.org_id}\u0000${String(k.livemode)}\u0000${k.participant_id}`;

function rowOf(r: RawRow): ScheduleRow {
  return { ...r, minimum_amount_cents: Number(r.minimum_amount_cents) };
}

async function find(q: Q, s: Tenant, participantId: string): Promise<ScheduleRow | undefined> {
  const [r] = await q<RawRow[]>`
    select ${q.unsafe(COLUMNS)} from payouts.payout_schedules
    where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId}`;
  return r === undefined ? undefined : rowOf(r);
}

async function save(q: Q, s: Tenant, participantId: string, v: ScheduleValues): Promise<ScheduleRow> {
  const [r] = await q<RawRow[]>`
    insert into payouts.payout_schedules (org_id, livemode, participant_id, interval, weekly_anchor, monthly_anchor, delay_days, minimum_amount_cents, next_run_at)
    values (${s.orgId}, ${s.livemode}, ${participantId}, ${v.interval}, ${v.weekly_anchor}, ${v.monthly_anchor}, ${v.delay_days}, ${v.minimum_amount_cents},
      ${v.next_run_at})
    on conflict (org_id, livemode, participant_id) do update
      set interval = excluded.interval, weekly_anchor = excluded.weekly_anchor, monthly_anchor = excluded.monthly_anchor,
          delay_days = excluded.delay_days, minimum_amount_cents = excluded.minimum_amount_cents, next_run_at = excluded.next_run_at,
          claimed_until = null, claim_token = null, updated_at = now()
    returning ${q.unsafe(COLUMNS)}`;
  if (r === undefined) throw new Error("payout schedule upsert returned no row");
  return rowOf(r);
}

/**
 * One statement: the due rows after the key, locked while they are claimed (a row another run is claiming is
 * skipped, not waited for). A sandbox row is due by its org's clock: real cutoff plus the org's advance.
 */
async function claimDue(q: Q, cutoff: DueCutoff, after: ScheduleKey | undefined, limit: number, token: string, leaseMs: number): Promise<ScheduleRow[]> {
  const advanced = q.json(Object.fromEntries(cutoff.advanced));
  const a = after ?? { org_id: "", livemode: false, participant_id: "" };
  const rows = await q<RawRow[]>`
    with due as (
      select s.org_id, s.livemode, s.participant_id
      from payouts.payout_schedules s
      left join jsonb_each_text(${advanced}) adv(org_id, secs) on adv.org_id = s.org_id and not s.livemode
      where s.next_run_at is not null
        and s.next_run_at <= ${cutoff.at}::timestamptz + coalesce(adv.secs::bigint, 0) * interval '1 second'
        and (s.claimed_until is null or s.claimed_until < now())
        and (s.org_id, s.livemode, s.participant_id) > (${a.org_id}, ${a.livemode}, ${a.participant_id})
      order by s.org_id, s.livemode, s.participant_id
      limit ${limit}
      for update of s skip locked
    )
    update payouts.payout_schedules s
      set claimed_until = now() + ${leaseMs} * interval '1 millisecond', claim_token = ${token}
    from due
    where s.org_id = due.org_id and s.livemode = due.livemode and s.participant_id = due.participant_id
    returning ${q.unsafe(
      COLUMNS.split(", ")
        .map((c) => `s.${c}`)
        .join(", "),
    )}`;
  return rows.map(rowOf).sort((x, y) => (keyOf(x) < keyOf(y) ? -1 : keyOf(x) > keyOf(y) ? 1 : 0));
}

async function findRuns(q: Q, periods: readonly SchedulePeriod[]): Promise<ScheduleRun[]> {
  if (periods.length === 0) return [];
  const wanted = periods.map(({ org_id, livemode, participant_id, period }) => ({ org_id, livemode, participant_id, period }));
  const rows = await q<(Omit<ScheduleRun, "amount_cents"> & { amount_cents: string | null })[]>`
    select r.org_id, r.livemode, r.participant_id, r.period, r.outcome, r.payout_id, r.amount_cents, r.reason
      from jsonb_to_recordset(${q.json(wanted)}) as w(org_id text, livemode boolean, participant_id text, period text)
      join payouts.payout_schedule_runs r
        on r.org_id = w.org_id and r.livemode = w.livemode and r.participant_id = w.participant_id and r.period = w.period`;
  return rows.map((r) => ({ ...r, amount_cents: r.amount_cents === null ? null : Number(r.amount_cents) }));
}

/**
 * One statement for a batch: the runs not recorded yet are inserted, the events of those inserted written to the
 * outbox, and each schedule still claimed by this run released and moved to its next run. Only this run's claims:
 * a PUT meanwhile set a new schedule (and dropped the claim), which stays as it was set. Runs are recorded whoever
 * holds the claim: the period was paid (or skipped) either way.
 */
async function settle(q: Q, token: string, outcomes: readonly ScheduleOutcome[]): Promise<boolean[]> {
  if (outcomes.length === 0) return [];
  const schedules = outcomes.map(({ key, next }) => ({
    org_id: key.org_id,
    livemode: key.livemode,
    participant_id: key.participant_id,
    next_run_at: next?.toISOString() ?? null,
  }));
  const runs = outcomes.flatMap((o) => (o.run === undefined ? [] : [o.run]));
  const events = outcomes.flatMap((o, n) =>
    o.run === undefined || o.event === undefined ? [] : [{ ...outboxRowValues(o.event), participant_id: o.key.participant_id, period: o.run.period, n }],
  );
  const recorded = await q<ScheduleKey[]>`
    with s as (
      select * from jsonb_to_recordset(${q.json(schedules as unknown as postgres.JSONValue)})
        as s(org_id text, livemode boolean, participant_id text, next_run_at timestamptz)
    ), runs as (
      insert into payouts.payout_schedule_runs (org_id, livemode, participant_id, period, outcome, payout_id, amount_cents, reason)
      select org_id, livemode, participant_id, period, outcome, payout_id, amount_cents, reason
        from jsonb_populate_recordset(null::payouts.payout_schedule_runs, ${q.json(runs as unknown as postgres.JSONValue)})
      on conflict do nothing
      returning org_id, livemode, participant_id, period
    ), ev as (
      insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
      select e.id, e.org_id, e.livemode, e.type, e.subject, e.payload, e.headers
        from jsonb_to_recordset(${q.json(events as unknown as postgres.JSONValue)})
             as e(id text, org_id text, livemode boolean, participant_id text, period text, type text, subject text, payload jsonb, headers jsonb, n int)
        join runs using (org_id, livemode, participant_id, period)
       order by e.n
      returning 1
    ), moved as (
      update payouts.payout_schedules p
         set claimed_until = null, claim_token = null, next_run_at = coalesce(s.next_run_at, p.next_run_at), updated_at = now()
        from s
       where p.org_id = s.org_id and p.livemode = s.livemode and p.participant_id = s.participant_id and p.claim_token = ${token}
      returning 1
    )
    select org_id, livemode, participant_id from runs`;
  if (events.length > 0) wakeOutboxRelay("payouts");
  const done = new Set(recorded.map(keyOf));
  return outcomes.map((o) => o.run !== undefined && done.has(keyOf(o.key)));
}

export function pgScheduleStore(sql: Sql): ScheduleStore {
  return {
    find: (tenant, participantId) => find(sql, tenant, participantId),
    save: (tenant, participantId, values) => save(sql, tenant, participantId, values),
    claimDue: (cutoff, after, limit, token, leaseMs) => claimDue(sql, cutoff, after, limit, token, leaseMs),
    findRuns: (periods) => findRuns(sql, periods),
    settle: (token, outcomes) => settle(sql, token, outcomes),
  };
}
