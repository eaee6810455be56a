/** SQL of payout schedules (one per participant, org and environment) and of what each scheduled run did. */
import type { Tenant } from "@treasury/contracts";
import { withTx, writeOutbox } from "@treasury/service-kit";
import type { DueCutoff, ScheduleKey, ScheduleRow, ScheduleRun, ScheduleStore, ScheduleValues } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

type RawRow = Omit<ScheduleRow, "minimum_amount_cents"> & { minimum_amount_cents: string };

const COLUMNS =
  "org_id, livemode, participant_id, interval, weekly_anchor, monthly_anchor, delay_days, minimum_amount_cents, next_run_at, created_at, updated_at";

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
  const key = (r: ScheduleKey) => `${r.org_id}\u0000${String(r.livemode)}\u0000${r.participant_id}`;
  return rows.map(rowOf).sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0));
}

async function findRun(q: Q, k: ScheduleKey, period: string): Promise<ScheduleRun | undefined> {
  const [r] = await q<(Omit<ScheduleRun, "amount_cents"> & { amount_cents: string | null })[]>`
    select org_id, livemode, participant_id, period, outcome, payout_id, amount_cents, reason from payouts.payout_schedule_runs
    where org_id = ${k.org_id} and livemode = ${k.livemode} and participant_id = ${k.participant_id} and period = ${period}`;
  return r === undefined ? undefined : { ...r, amount_cents: r.amount_cents === null ? null : Number(r.amount_cents) };
}

async function finish(q: Q, k: ScheduleKey, token: string, next: Date | undefined): Promise<void> {
  // Only this run's claim: a PUT meanwhile set a new schedule (and dropped the claim), which stays as it was set.
  await q`
    update payouts.payout_schedules
      set claimed_until = null, claim_token = null, next_run_at = coalesce(${next ?? null}::timestamptz, next_run_at), updated_at = now()
    where org_id = ${k.org_id} and livemode = ${k.livemode} and participant_id = ${k.participant_id} and claim_token = ${token}`;
}

export function pgScheduleStore(sql: Sql): ScheduleStore {
  return {
    find: (tenant, participantId) => find(sql, tenant, participantId),
    save: (tenant, participantId, values) => save(sql, tenant, participantId, values),
    claimDue: (cutoff, after, limit, token, leaseMs) => claimDue(sql, cutoff, after, limit, token, leaseMs),
    findRun: (key, period) => findRun(sql, key, period),
    recordRun: (run, event) =>
      withTx(sql, async (tx) => {
        const inserted = await tx`
          insert into payouts.payout_schedule_runs (org_id, livemode, participant_id, period, outcome, payout_id, amount_cents, reason)
          values (${run.org_id}, ${run.livemode}, ${run.participant_id}, ${run.period}, ${run.outcome}, ${run.payout_id}, ${run.amount_cents}, ${run.reason})
          on conflict do nothing
          returning 1`;
        if (inserted.length === 0) return false;
        if (event !== undefined) await writeOutbox(tx, "payouts", event);
        return true;
      }),
    finish: (key, token, next) => finish(sql, key, token, next),
  };
}
