/** SQL of refund requests. */
import { parseCents, type Tenant } from "@treasury/contracts";
import type postgres from "postgres";
import type { NewRefundRequest, RefundRequestRow, RequestFields } from "../domain/records.ts";
import type { RefundRequestStatus } from "../domain/refund-request.ts";
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
      status, metadata, idempotency_key, request_hash, created_at, updated_at)
    values (${r.id}, ${s.orgId}, ${s.livemode}, ${r.sale_reference}, ${r.customer_id}, ${r.customer_email}, ${r.amount}, ${r.reason},
      ${r.refund_from}, 'created', ${q.json(r.metadata as postgres.JSONValue)}, ${r.idempotency_key}, ${r.request_hash}, ${r.created_at}, ${r.created_at})
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
