/** SQL of payouts. int8 columns are parsed into Cents once, here, with safe-integer checks. */
import { parseCents, type Tenant } from "@treasury/contracts";
import { Coalescer, type OutboxRowValues } from "@treasury/service-kit";
import type postgres from "postgres";
import type { NewPayout, PayoutAction, PayoutRow, PayoutStatus } from "../domain/records.ts";
import type { ActionFields, ActionOutcome, IntentSettlement, ListFilter, PayoutStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";
import { returnFee } from "./settings.ts";

type RawRow = Omit<PayoutRow, "amount" | "fees" | "net_amount" | "return_fee" | "previous_balance" | "new_balance"> & {
  amount: string;
  return_fee: string;
  fees: string;
  net_amount: string;
  previous_balance: string | null;
  new_balance: string | null;
};

function parse(r: RawRow): PayoutRow {
  return {
    ...r,
    amount: parseCents(r.amount),
    fees: parseCents(r.fees),
    net_amount: parseCents(r.net_amount),
    return_fee: parseCents(r.return_fee),
    previous_balance: r.previous_balance === null ? null : parseCents(r.previous_balance),
    new_balance: r.new_balance === null ? null : parseCents(r.new_balance),
  };
}
const one = (rows: RawRow[]): PayoutRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

/**
 * Records intents (`posting`), one statement for many (pgPayoutStore coalesces them): per intent its row, or
 * undefined when its reference is taken (the caller reads the existing one). Rows are matched by their own id,
 * so of two intents with one reference in a batch only the inserted one gets a row.
 */
async function insertIntents(q: Q, ps: readonly NewPayout[]): Promise<(PayoutRow | undefined)[]> {
  const rows = await q<RawRow[]>`
    insert into payouts.payouts (id, org_id, livemode, participant_id, requested_wallet_id, reference_id, request_hash, reference_type,
      description, payout_method, metadata, amount, fees, fees_paid_by, net_amount, rail, status, ledger_reference,
      dest_routing_number, dest_account_type, dest_last4, dest_sealed, risk_evaluation_id)
    select p.id, p.org_id, p.livemode, p.participant_id, p.requested_wallet_id, p.reference_id, p.request_hash, p.reference_type,
      p.description, p.payout_method, p.metadata, p.amount, p.fees, p.fees_paid_by, p.net_amount, p.rail, coalesce(p.status, 'posting'), p.ledger_reference,
      p.dest_routing_number, p.dest_account_type, p.dest_last4, p.dest_sealed, p.risk_evaluation_id
      from jsonb_populate_recordset(null::payouts.payouts, ${q.json(ps as unknown as postgres.JSONValue)}) as p
    on conflict (org_id, livemode, reference_id) do nothing
    returning *`;
  const byId = new Map(rows.map((r) => [r.id, parse(r)]));
  return ps.map((p) => byId.get(p.id));
}

async function findByReference(q: Q, s: Tenant, referenceId: string): Promise<PayoutRow | undefined> {
  return one(await q<RawRow[]>`select * from payouts.payouts where org_id = ${s.orgId} and livemode = ${s.livemode} and reference_id = ${referenceId}`);
}

async function findPayout(q: Q, s: Tenant, id: string): Promise<PayoutRow | undefined> {
  return one(await q<RawRow[]>`select * from payouts.payouts where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`);
}

async function findById(q: Q, id: string): Promise<PayoutRow | undefined> {
  return one(await q<RawRow[]>`select * from payouts.payouts where id = ${id}`);
}

/** A refused intent asked for again with the same request: back to `posting`, once. */
async function retryRefused(q: Q, id: string): Promise<PayoutRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payouts.payouts set status = 'posting', refusal_code = null, updated_at = now() where id = ${id} and status = 'refused' returning *`,
  );
}

/** A refused intent moved nothing: a different request with its reference_id replaces it. */
async function discardRefused(q: Q, id: string): Promise<void> {
  await q`delete from payouts.payouts where id = ${id} and status = 'refused'`;
}

/** The payout under review an evaluation holds, if it is still under review. */
async function findUnderReview(q: Q, s: Tenant, evaluationId: string): Promise<PayoutRow | undefined> {
  return one(
    await q<RawRow[]>`
    select * from payouts.payouts where org_id = ${s.orgId} and livemode = ${s.livemode} and risk_evaluation_id = ${evaluationId} and status = 'under_review'`,
  );
}

/** under_review → posting (approved): the caller drives the ledger post next. Undefined when it was no longer under review. */
async function releaseReview(q: Q, id: string): Promise<PayoutRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payouts.payouts set status = 'posting', updated_at = now() where id = ${id} and status = 'under_review' returning *`,
  );
}

/**
 * under_review (denied) or posting (approved, then refused by the ledger) → failed with its reason and
 * `payout.failed`, in one statement; undefined when the payout had moved on.
 */
async function failUnposted(
  sql: Sql,
  id: string,
  from: "under_review" | "posting",
  reason: string,
  event: (row: PayoutRow) => OutboxRowValues,
): Promise<PayoutRow | undefined> {
  return sql.begin(async (tx) => {
    const row = one(
      await tx<RawRow[]>`
      update payouts.payouts set status = 'failed', failure_reason = ${reason}, failed_at = now(), updated_at = now()
       where id = ${id} and status = ${from} and risk_evaluation_id is not null returning *`,
    );
    if (row === undefined) return undefined;
    const e = event(row);
    await tx`insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
      values (${e.id}, ${e.org_id}, ${e.livemode}, ${e.type}, ${e.subject}, ${tx.json(e.payload as postgres.JSONValue)}, ${tx.json(e.headers as postgres.JSONValue)})`;
    return row;
  }) as Promise<PayoutRow | undefined>;
}

async function refuse(q: Q, id: string, code: string): Promise<void> {
  await q`update payouts.payouts set status = 'refused', refusal_code = ${code}, updated_at = now() where id = ${id} and status = 'posting'`;
}

/** Events to write with a state change, in order; each becomes an outbox row only if the row moved. */
function eventsJson(q: Q, events: readonly OutboxRowValues[]) {
  return q.json(events.map((e, n) => ({ ...e, n })) as unknown as postgres.JSONValue);
}

/**
 * posting → pending (live) or paid (sandbox) with what the ledger answered, and its events, one statement for
 * many (coalesced): a payout's event rows are inserted only when it moved, in the order given. Per settlement
 * the row, or undefined when it was not `posting` (another driver won).
 */
async function settleIntents(q: Q, ss: readonly IntentSettlement[]): Promise<(PayoutRow | undefined)[]> {
  // Named as the table's columns, so the row type gives every value its column's type.
  const fields = ss.map(({ events: _e, at, ...f }) => ({ ...f, updated_at: at }));
  const events = ss.flatMap((s) => s.events.map((e) => ({ ...e, payout_id: s.id })));
  const rows = await q<RawRow[]>`
    with s as (
      select id, status, transaction_id, wallet_id, previous_balance, new_balance, updated_at as at
        from jsonb_populate_recordset(null::payouts.payouts, ${q.json(fields as unknown as postgres.JSONValue)})
    ), done as (
      update payouts.payouts p
         set status = s.status, transaction_id = s.transaction_id, wallet_id = s.wallet_id,
             previous_balance = s.previous_balance, new_balance = s.new_balance,
             paid_at = case when s.status = 'paid' then s.at else null end,
             bank_transfer_status = case when p.rail = 'bank_ach' then 'awaiting_file' else null end, updated_at = s.at
        from s
       where p.id = s.id and p.status = 'posting'
       returning p.*
    ), ev as (
      insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
      select e.id, e.org_id, e.livemode, e.type, e.subject, e.payload, e.headers
        from jsonb_to_recordset(${eventsJson(q, events)})
             as e(payout_id text, id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb, n int)
        join done on done.id = e.payout_id
       order by e.n
      returning 1
    )
    select done.* from done`;
  const byId = new Map(rows.map((r) => [r.id, parse(r)]));
  return ss.map((s) => byId.get(s.id));
}

/** Payouts stuck in `posting` past the grace period, oldest first. */
async function stuckPosting(q: Q, graceMs: number, limit: number): Promise<PayoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payouts.payouts where status = 'posting' and updated_at < now() - make_interval(secs => ${graceMs / 1000})
    order by updated_at limit ${limit}`;
  return rows.map(parse);
}

/** Visible payouts, newest first (an intent not yet posted shows as pending; refused ones are not shown). */
async function listPayouts(q: Q, s: Tenant, f: ListFilter): Promise<{ rows: PayoutRow[]; total: number }> {
  const statuses =
    f.status === undefined
      ? ["posting", "under_review", "pending", "processing", "paid", "failed"]
      : f.status === "pending"
        ? ["posting", "pending"]
        : [f.status];
  const participant = f.participantId ?? null;
  const rows = await q<(RawRow & { total: string })[]>`
    select *, count(*) over () as total from payouts.payouts
     where org_id = ${s.orgId} and livemode = ${s.livemode} and status = any(${statuses})
       and (${participant}::text is null or participant_id = ${participant})
     order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  let total = rows.length === 0 ? 0 : Number(rows[0]?.total);
  if (rows.length === 0 && f.offset > 0) {
    const [c] = await q<{ n: string }[]>`
      select count(*)::text as n from payouts.payouts
       where org_id = ${s.orgId} and livemode = ${s.livemode} and status = any(${statuses}) and (${participant}::text is null or participant_id = ${participant})`;
    total = Number(c?.n ?? 0);
  }
  return { rows: rows.map(({ total: _t, ...r }) => parse(r)), total };
}

/** Starts a transition of a live payout: at most one in flight, and only from the given states. */
async function markAction(q: Q, id: string, action: PayoutAction, from: readonly PayoutStatus[], fields: ActionFields = {}): Promise<PayoutRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payouts.payouts
       set action = ${action}, action_at = now(), return_code = ${fields.return_code ?? null}, return_from = ${fields.return_from ?? null},
           return_fee = least(${fields.return_fee ?? 0}, net_amount), failure_reason = coalesce(${fields.failure_reason ?? null}, failure_reason),
           updated_at = now()
     where id = ${id} and action is null and status = any(${from as string[]}) and rail = 'bank_ach'
     returning *`,
  );
}

async function unfiledOf(q: Q, s: Tenant, participantId: string): Promise<PayoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payouts.payouts
     where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId}
       and status = 'pending' and rail = 'bank_ach' and action is null
     order by created_at, id`;
  return rows.map(parse);
}

/**
 * Ends the transition in flight with its outcome and event, in one statement; undefined when another driver ended
 * it. A return that says the account cannot take money disables the participant's bank account in the same
 * statement (with its event) while it is still active and still the payout's destination (ports.ts).
 */
async function finishAction(q: Q, id: string, action: PayoutAction, fields: ActionOutcome, event: OutboxRowValues): Promise<PayoutRow | undefined> {
  const settle = action === "settle";
  const disable = fields.disable_bank_account;
  // Without a bank account to disable, `disabled` selects nothing and its event's values are never used.
  const dis = disable?.event;
  return one(
    await q<RawRow[]>`
    with done as (
      update payouts.payouts
         set status = ${fields.status}, action = null, action_at = null, bank_transfer_status = ${fields.bank_transfer_status},
             settle_transaction_id = case when ${settle} then ${fields.transaction_id} else settle_transaction_id end,
             return_transaction_id = case when ${settle} then return_transaction_id else ${fields.transaction_id} end,
             failure_reason = coalesce(${fields.failure_reason ?? null}, failure_reason),
             paid_at = case when ${settle} then now() else paid_at end,
             failed_at = case when ${settle} then failed_at else now() end, updated_at = now()
       where id = ${id} and action = ${action}
       returning *
    ), ev as (
      insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
      select ${event.id}, ${event.org_id}, ${event.livemode}, ${event.type}, ${event.subject}, ${q.json(event.payload as never)}, ${q.json(event.headers)}
        from done
      returning 1
    ), disabled as (
      update payouts.bank_accounts b
         set status = 'disabled', disabled_reason = ${disable?.reason ?? null}, disabled_at = now(), disabled_by_payout_id = done.id, updated_at = now()
        from done
       where ${disable !== undefined} and b.id = ${disable?.id ?? null} and b.status = 'active'
         and b.org_id = done.org_id and b.livemode = done.livemode and b.participant_id = done.participant_id
         and b.routing_number = done.dest_routing_number and b.account_type = done.dest_account_type and b.last4 = done.dest_last4
         and b.updated_at <= done.created_at
      returning b.id
    ), disabled_ev as (
      insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
      select ${dis?.id ?? null}, ${dis?.org_id ?? null}, ${dis?.livemode ?? null}, ${dis?.type ?? null}, ${dis?.subject ?? null},
             ${q.json((dis?.payload ?? {}) as never)}, ${q.json(dis?.headers ?? {})}
        from disabled
      returning 1
    )
    select done.* from done`,
  );
}

async function stuckActions(q: Q, graceMs: number, limit: number): Promise<PayoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payouts.payouts where action is not null and action_at < now() - make_interval(secs => ${graceMs / 1000})
    order by action_at limit ${limit}`;
  return rows.map(parse);
}

/** Processing payouts filed before `before`: settled by the bank by now. */
async function dueForSettlement(q: Q, before: Date, limit: number): Promise<PayoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payouts.payouts where status = 'processing' and action is null and processing_at < ${before}
    order by processing_at limit ${limit}`;
  return rows.map(parse);
}

/** The filed payout a returned entry names: the latest with that trace number (sequences cycle after ten million). */
async function findByTrace(q: Q, trace: string): Promise<PayoutRow | undefined> {
  return one(
    await q<RawRow[]>`
    select * from payouts.payouts where trace_number = ${trace} and livemode order by processing_at desc nulls last limit 1`,
  );
}

/** Live payouts waiting for a file, oldest first, locked for this cut (never a sandbox payout). */
export async function claimUnfiled(q: Q, limit: number): Promise<PayoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payouts.payouts
     where status = 'pending' and rail = 'bank_ach' and livemode and action is null
     order by created_at, id
     limit ${limit}
       for update skip locked`;
  return rows.map(parse);
}

/**
 * The payout store over PostgreSQL. The two writes every payout makes are each coalesced: the intents (and
 * settles) of the requests that arrive in one event-loop turn go to PostgreSQL as one statement (service-kit
 * coalesce.ts), each request still waiting for its own row.
 */
export function pgPayoutStore(sql: Sql): PayoutStore {
  const inserts = new Coalescer((ps: readonly NewPayout[]) => insertIntents(sql, ps));
  const settles = new Coalescer((ss: readonly IntentSettlement[]) => settleIntents(sql, ss));
  return {
    insertIntent: (p) => inserts.submit(p),
    settleIntent: (s) => settles.submit(s),
    findByReference: (tenant, referenceId) => findByReference(sql, tenant, referenceId),
    findPayout: (tenant, id) => findPayout(sql, tenant, id),
    findById: (id) => findById(sql, id),
    retryRefused: (id) => retryRefused(sql, id),
    discardRefused: (id) => discardRefused(sql, id),
    refuse: (id, code) => refuse(sql, id, code),
    findUnderReview: (tenant, evaluationId) => findUnderReview(sql, tenant, evaluationId),
    releaseReview: (id) => releaseReview(sql, id),
    failUnposted: (id, from, reason, event) => failUnposted(sql, id, from, reason, event),
    list: (tenant, f) => listPayouts(sql, tenant, f),
    stuckPosting: (graceMs, limit) => stuckPosting(sql, graceMs, limit),
    stuckActions: (graceMs, limit) => stuckActions(sql, graceMs, limit),
    markAction: (id, action, from, fields) => markAction(sql, id, action, from, fields),
    unfiledOf: (tenant, participantId) => unfiledOf(sql, tenant, participantId),
    returnFee: (tenant) => returnFee(sql, tenant),
    finishAction: (id, action, fields, event) => finishAction(sql, id, action, fields, event),
    dueForSettlement: (before, limit) => dueForSettlement(sql, before, limit),
    findByTrace: (trace) => findByTrace(sql, trace),
  };
}
