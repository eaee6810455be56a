/** SQL of refund requests. */
import { parseCents, type Tenant } from "@treasury/contracts";
import type postgres from "postgres";
import type { NewRefundRequest, RefundRequestRow, RequestFields } from "../domain/records.ts";
import { expiryFields, type RefundRequestStatus } from "../domain/refund-request.ts";
import type { ClockReading } from "../usecases/ports.ts";
import type { Q } from "./db.ts";

type RawRow = Omit<RefundRequestRow, "amount"> & { amount: string | null };

function parse(r: RawRow): RefundRequestRow {
  return { ...r, amount: r.amount === null ? null : parseCents(r.amount) };
}

const one = (rows: RawRow[]): RefundRequestRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

/** Inserts a `created` request; undefined when its idempotency key is taken (the caller replays the existing one). */
export async function insertRefundRequest(q: Q, s: Tenant, r: NewRefundRequest): Promise<RefundRequestRow | undefined> {
  return one(
    await q<RawRow[]>`
    insert into refunds.refund_requests (id, org_id, livemode, sale_reference, customer_id, customer_email, amount, reason, refund_from,
      status, metadata, idempotency_key, request_hash, created_at, updated_at, expires_at)
    values (${r.id}, ${s.orgId}, ${s.livemode}, ${r.sale_reference}, ${r.customer_id}, ${r.customer_email}, ${r.amount}, ${r.reason},
      ${r.refund_from}, 'created', ${q.json(r.metadata as postgres.JSONValue)}, ${r.idempotency_key}, ${r.request_hash}, ${r.created_at}, ${r.created_at},
      ${r.expires_at})
    on conflict (org_id, livemode, idempotency_key) where idempotency_key is not null do nothing
    returning *`,
  );
}

export async function findRefundRequest(q: Q, s: Tenant, id: string, forUpdate = false): Promise<RefundRequestRow | undefined> {
  return one(
    forUpdate
      ? await q<RawRow[]>`select * from refunds.refund_requests where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} for update`
      : await q<RawRow[]>`select * from refunds.refund_requests where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`,
  );
}

export async function findRefundRequestByKey(q: Q, s: Tenant, key: string): Promise<RefundRequestRow | undefined> {
  return one(await q<RawRow[]>`select * from refunds.refund_requests where org_id = ${s.orgId} and livemode = ${s.livemode} and idempotency_key = ${key}`);
}

export async function listRefundRequests(
  q: Q,
  s: Tenant,
  f: { status: RefundRequestStatus | undefined; saleReference: string | undefined; limit: number; offset: number },
): Promise<{ rows: RefundRequestRow[]; total: number }> {
  const status = f.status ?? null;
  const sale = f.saleReference ?? null;
  const rows = await q<RawRow[]>`
    select * from refunds.refund_requests
    where org_id = ${s.orgId} and livemode = ${s.livemode} and (${status}::text is null or status = ${status})
      and (${sale}::text is null or sale_reference = ${sale})
    order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  const [count] = await q<{ n: string }[]>`
    select count(*)::text as n from refunds.refund_requests
    where org_id = ${s.orgId} and livemode = ${s.livemode} and (${status}::text is null or status = ${status})
      and (${sale}::text is null or sale_reference = ${sale})`;
  return { rows: rows.map(parse), total: Number(count?.n ?? 0) };
}

/** Moves a request from `from` with `fields`; undefined when it was not in `from` (another move won). */
export async function moveRefundRequest(q: Q, id: string, from: RefundRequestStatus, fields: RequestFields, at: Date): Promise<RefundRequestRow | undefined> {
  const set: Record<string, unknown> = { ...fields, updated_at: at };
  if (fields.review_metadata !== undefined) set["review_metadata"] = q.json(fields.review_metadata as postgres.JSONValue);
  return one(await q<RawRow[]>`update refunds.refund_requests set ${q(set as never)} where id = ${id} and status = ${from} returning *`);
}

/**
 * Expires up to `limit` due requests in ONE statement. A request's now is real time plus its org's sandbox advance
 * (live: none); it is due when still `created` with expires_at at or before that now, and is stamped cancelled at
 * that now. `skip locked` leaves a request whose approve, reject or cancel holds its row lock to that move, and
 * `status = 'created'` in the update makes a request expire once however many passes race. The extra bound on
 * expires_at (real time plus the largest advance) lets the partial index on created requests narrow the scan.
 */
export async function expireDueRequests(q: Q, now: ClockReading, limit: number): Promise<RefundRequestRow[]> {
  const orgs = [...now.advanced.keys()];
  const seconds = orgs.map((o) => now.advanced.get(o) ?? 0);
  const furthest = Math.max(0, ...seconds);
  // The values are the domain's; each row's cancelled_at is its own org's now, computed below.
  const f = expiryFields(now.realNow);
  const rows = await q<RawRow[]>`
    with due as (
      select r.id, ${now.realNow}::timestamptz + make_interval(secs => coalesce(c.seconds, 0)) as at
      from refunds.refund_requests r
      left join unnest(${orgs}::text[], ${seconds}::bigint[]) as c(org_id, seconds) on c.org_id = r.org_id and not r.livemode
      where r.status = 'created'
        and r.expires_at <= ${now.realNow}::timestamptz + make_interval(secs => ${furthest})
        and r.expires_at <= ${now.realNow}::timestamptz + make_interval(secs => coalesce(c.seconds, 0))
      order by r.expires_at, r.id
      limit ${limit}
      for update of r skip locked
    )
    update refunds.refund_requests r
       set status = ${f.status}, cancelled_by = ${f.cancelled_by}, cancellation_reason = ${f.cancellation_reason},
           cancelled_at = due.at, updated_at = due.at
      from due
     where r.id = due.id and r.status = 'created'
     returning r.*`;
  return rows.map(parse).sort((a, b) => a.expires_at.getTime() - b.expires_at.getTime() || (a.id < b.id ? -1 : 1));
}
