/** SQL of refunds. int8 columns are parsed into numbers once, here, with safe-integer checks. */
import { parseCents, type Tenant } from "@treasury/contracts";
import type postgres from "postgres";
import type { NewRefund, ProcessorState, RefundRow } from "../domain/records.ts";
import type { SettledRefund, RefundSettlement } from "../usecases/ports.ts";
import type { Q } from "./db.ts";

const CENTS = ["refunded_amount", "from_creator", "from_platform", "sales_tax", "hold_amount_used", "creator_receivable_amount"] as const;
const NULLABLE_CENTS = ["amount_requested", "remaining_amount", "sale_gross"] as const;
type RawRow = Omit<RefundRow, (typeof CENTS)[number] | (typeof NULLABLE_CENTS)[number]> &
  Record<(typeof CENTS)[number], string> &
  Record<(typeof NULLABLE_CENTS)[number], string | null>;

function parse(r: RawRow): RefundRow {
  const out = { ...r } as unknown as RefundRow;
  for (const k of CENTS) out[k] = parseCents(r[k]);
  for (const k of NULLABLE_CENTS) out[k] = r[k] === null ? null : parseCents(r[k]);
  return out;
}

const one = (rows: RawRow[]): RefundRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

/**
 * Records refund intents (`pending`), one statement for many (store/refunds-store.ts coalesces them), each with its
 * org's shortfall policy as it stands now (no settings row: the default, receivable). Per intent its row, or
 * undefined when its request key, external id or ledger reference is taken (also by another intent of the same
 * batch): the caller reads the existing refund. Rows are matched by their own id.
 */
export async function insertRefunds(q: Q, rs: readonly { tenant: Tenant; refund: NewRefund }[]): Promise<(RefundRow | undefined)[]> {
  // Named as the table's columns, so the row type gives every value its column's type.
  const values = rs.map(({ tenant, refund }) => ({ ...refund, org_id: tenant.orgId, livemode: tenant.livemode }));
  const rows = await q<RawRow[]>`
    insert into refunds.refunds (id, org_id, livemode, request_key, request_hash, idempotency_key, external_refund_id, refund_request_id,
      sale_reference, amount_requested, refund_from, shortfall, reason, metadata, status, ledger_reference, created_at, updated_at)
    select r.id, r.org_id, r.livemode, r.request_key, r.request_hash, r.idempotency_key, r.external_refund_id, r.refund_request_id,
      r.sale_reference, r.amount_requested, r.refund_from,
      coalesce((select st.shortfall_policy from refunds.settings st where st.org_id = r.org_id and st.livemode = r.livemode), 'receivable'),
      r.reason, r.metadata, 'pending', r.ledger_reference, r.created_at, r.created_at
    from jsonb_populate_recordset(null::refunds.refunds, ${q.json(values as unknown as postgres.JSONValue)}) as r
    on conflict do nothing
    returning *`;
  const byId = new Map(rows.map((r) => [r.id, parse(r)]));
  return rs.map(({ refund }) => byId.get(refund.id));
}

/** One refund intent (inside a caller's transaction: the approval of a refund request). */
export async function insertRefund(q: Q, s: Tenant, r: NewRefund): Promise<RefundRow | undefined> {
  const [row] = await insertRefunds(q, [{ tenant: s, refund: r }]);
  return row;
}

export async function findRefund(q: Q, s: Tenant, id: string): Promise<RefundRow | undefined> {
  return one(await q<RawRow[]>`select * from refunds.refunds where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`);
}

/** The refund a client request names: by its request key, else by its external_refund_id. */
export async function findRefundForRequest(q: Q, s: Tenant, requestKey: string, externalRefundId: string | undefined): Promise<RefundRow | undefined> {
  return one(
    await q<RawRow[]>`
    select * from refunds.refunds
    where org_id = ${s.orgId} and livemode = ${s.livemode}
      and (request_key = ${requestKey} or (${externalRefundId ?? null}::text is not null and external_refund_id = ${externalRefundId ?? null}))
    order by (request_key = ${requestKey}) desc
    limit 1`,
  );
}

export async function listRefunds(
  q: Q,
  s: Tenant,
  f: { saleReference: string | undefined; limit: number; offset: number },
): Promise<{ rows: RefundRow[]; total: number }> {
  const sale = f.saleReference ?? null;
  const rows = await q<RawRow[]>`
    select * from refunds.refunds
    where org_id = ${s.orgId} and livemode = ${s.livemode} and (${sale}::text is null or sale_reference = ${sale})
    order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  const [count] = await q<{ n: string }[]>`
    select count(*)::text as n from refunds.refunds
    where org_id = ${s.orgId} and livemode = ${s.livemode} and (${sale}::text is null or sale_reference = ${sale})`;
  return { rows: rows.map(parse), total: Number(count?.n ?? 0) };
}

/**
 * pending → completed with what the ledger did, its events, and (for an approved refund request) the request
 * processing → completed, in ONE statement for many refunds (coalesced): its own commit, a refund's events
 * written if and only if it moved. Per settlement the row and whether its request moved with it, or undefined
 * when it was not pending (another driver settled it first).
 */
export async function settleCompletedMany(q: Q, ss: readonly RefundSettlement[]): Promise<(SettledRefund | undefined)[]> {
  // Named as the table's columns, so the row type gives every value its column's type.
  const values = ss.map(({ id, outcome, requestId }) => ({ ...outcome, id, refund_request_id: requestId, updated_at: outcome.completed_at }));
  const events = ss.flatMap((s) => s.events.map((e) => ({ ...e, refund_id: s.id })));
  const rows = await q<(RawRow & { request_moved: boolean })[]>`
    with o as (
      select * from jsonb_populate_recordset(null::refunds.refunds, ${q.json(values as unknown as postgres.JSONValue)})
    ), done as (
      update refunds.refunds r set status = 'completed', transaction_id = o.transaction_id, sale_transaction_id = o.sale_transaction_id,
        participant_id = o.participant_id, refunded_amount = o.refunded_amount, from_creator = o.from_creator,
        from_platform = o.from_platform, sales_tax = o.sales_tax, hold_amount_used = o.hold_amount_used,
        creator_receivable_amount = o.creator_receivable_amount, remaining_amount = o.remaining_amount, sale_gross = o.sale_gross,
        is_full_refund = o.is_full_refund, completed_at = o.completed_at, updated_at = o.updated_at
      from o
      where r.id = o.id and r.status = 'pending'
      returning r.*
    ), ev as (
      insert into refunds.outbox (id, org_id, livemode, type, subject, payload, headers)
      select e.id, e.org_id, e.livemode, e.type, e.subject, e.payload, e.headers
      from rows from (jsonb_to_recordset(${q.json(events as unknown as postgres.JSONValue)}::jsonb)
        as (refund_id text, id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb)) with ordinality as e
      join done on done.id = e.refund_id
      order by e.ordinality
      returning 1
    ), rq as (
      update refunds.refund_requests q set status = 'completed', refund_transaction_id = o.transaction_id, completed_at = o.completed_at,
        updated_at = o.completed_at
      from o join done on done.id = o.id
      where q.id = o.refund_request_id and q.status = 'processing'
      returning q.id
    )
    select done.*, exists (select 1 from rq where rq.id = done.refund_request_id) as request_moved from done`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ss.map(({ id }) => {
    const r = byId.get(id);
    if (r === undefined) return undefined;
    const { request_moved: requestMoved, ...row } = r;
    return { row: parse(row), requestMoved };
  });
}

/** pending → failed with the ledger's refusal; undefined when it was not pending. */
export async function markFailed(q: Q, id: string, code: string, reason: string, at: Date): Promise<RefundRow | undefined> {
  return one(
    await q<RawRow[]>`
    update refunds.refunds set status = 'failed', failure_code = ${code}, failure_reason = ${reason}, updated_at = ${at}
    where id = ${id} and status = 'pending'
    returning *`,
  );
}

/**
 * Records where a pending refund stands at the card processor. A settled state is not undone by a late
 * `pending`; undefined when the refund is no longer pending or nothing changed.
 */
export async function recordProcessorStatus(q: Q, id: string, p: ProcessorState): Promise<RefundRow | undefined> {
  return one(
    await q<RawRow[]>`
    update refunds.refunds
       set processor_status = ${p.status}, processor_refund_id = coalesce(${p.processor_refund_id}, processor_refund_id),
           processor_failure_reason = ${p.failure_reason}, updated_at = now()
     where id = ${id} and status = 'pending'
       and (processor_status is null or processor_status = 'pending')
       and processor_status is distinct from ${p.status}
     returning *`,
  );
}

export async function recordReversal(q: Q, id: string, transactionId: string): Promise<void> {
  await q`update refunds.refunds set reversal_transaction_id = ${transactionId} where id = ${id} and status = 'pending'`;
}

/** Refunds stuck in `pending` for longer than the grace period, oldest first (not those the processor holds). */
export async function stuckPending(q: Q, graceMs: number, limit: number): Promise<RefundRow[]> {
  const rows = await q<RawRow[]>`
    select * from refunds.refunds
    where status = 'pending' and processor_status is distinct from 'pending' and updated_at < now() - make_interval(secs => ${graceMs / 1000})
    order by updated_at limit ${limit}`;
  return rows.map(parse);
}
