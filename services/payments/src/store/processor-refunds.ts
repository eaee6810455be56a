/** SQL of card refunds at the processor, one per refund of the refunds service. */
import { parseCents } from "@treasury/contracts";
import type { Tenant } from "@treasury/contracts";
import type { NewProcessorRefund, ProcessorRefundRow, ProcessorRefundState } from "../domain/records.ts";
import type { ProcessorRefundKey, ProcessorRefundStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

type RawRow = Omit<ProcessorRefundRow, "amount"> & { amount: string };
const parse = (r: RawRow): ProcessorRefundRow => ({ ...r, amount: parseCents(r.amount) });
const one = (rows: RawRow[]): ProcessorRefundRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

export async function findProcessorRefund(q: Q, s: Tenant, refundId: string): Promise<ProcessorRefundRow | undefined> {
  return one(
    await q<RawRow[]>`
    select * from payments.processor_refunds where org_id = ${s.orgId} and livemode = ${s.livemode} and refund_id = ${refundId}`,
  );
}

export async function findByProcessorRefundId(q: Q, processorRefundId: string): Promise<ProcessorRefundRow | undefined> {
  return one(await q<RawRow[]>`select * from payments.processor_refunds where processor_refund_id = ${processorRefundId}`);
}

/** Refunds of one payment the processor has accepted and not yet settled. */
export async function unsettledOfPayment(q: Q, paymentIntent: string): Promise<ProcessorRefundRow[]> {
  const rows = await q<RawRow[]>`
    select * from payments.processor_refunds
     where processor_payment_intent = ${paymentIntent} and status = 'pending' and processor_refund_id is not null`;
  return rows.map(parse);
}

/** Records the intent to refund at the processor (or finds the one recorded before). */
export async function insertOrFindProcessorRefund(q: Q, r: NewProcessorRefund): Promise<ProcessorRefundRow> {
  const inserted = one(
    await q<RawRow[]>`
    insert into payments.processor_refunds (org_id, livemode, refund_id, checkout_session_id, sale_reference, amount, processor_payment_intent, status)
    values (${r.org_id}, ${r.livemode}, ${r.refund_id}, ${r.checkout_session_id}, ${r.sale_reference}, ${r.amount}, ${r.processor_payment_intent}, 'requested')
    on conflict (org_id, livemode, refund_id) do nothing
    returning *`,
  );
  if (inserted !== undefined) return inserted;
  const found = await findProcessorRefund(q, { orgId: r.org_id, livemode: r.livemode }, r.refund_id);
  if (found === undefined) throw new Error(`processor refund of ${r.refund_id} neither inserted nor found`);
  return found;
}

/**
 * Records what the processor says of a refund. A settled refund stays settled (a late `pending` does not undo
 * it); undefined when nothing changed.
 */
export async function recordProcessorRefundState(q: Q, key: ProcessorRefundKey, state: ProcessorRefundState): Promise<ProcessorRefundRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payments.processor_refunds
       set processor_refund_id = ${state.processor_refund_id}, status = ${state.status}, failure_reason = ${state.failure_reason}, updated_at = now()
     where org_id = ${key.org_id} and livemode = ${key.livemode} and refund_id = ${key.refund_id}
       and (status in ('requested', 'pending') or (status = 'succeeded' and ${state.status} = 'failed'))
       and (status <> ${state.status} or processor_refund_id is distinct from ${state.processor_refund_id})
     returning *`,
  );
}

export async function markNotified(q: Q, key: ProcessorRefundKey, status: string): Promise<void> {
  await q`
    update payments.processor_refunds set notified_status = ${status}, updated_at = now()
     where org_id = ${key.org_id} and livemode = ${key.livemode} and refund_id = ${key.refund_id} and status = ${status}`;
}

export function pgProcessorRefundStore(sql: Sql): ProcessorRefundStore {
  return {
    find: (tenant, refundId) => findProcessorRefund(sql, tenant, refundId),
    findByProcessorRefundId: (processorRefundId) => findByProcessorRefundId(sql, processorRefundId),
    unsettledOfPayment: (paymentIntent) => unsettledOfPayment(sql, paymentIntent),
    insertOrFind: (r) => insertOrFindProcessorRefund(sql, r),
    recordState: (key, state) => recordProcessorRefundState(sql, key, state),
    markNotified: (key, status) => markNotified(sql, key, status),
  };
}
