/** SQL of card disputes. int8 columns are parsed into numbers once, here. */
import { parseCents } from "@treasury/contracts";
import { outboxRowValues, wakeOutboxRelay, type OutboxRowValues } from "@treasury/service-kit";
import type { DisputeRow, DisputeStatus, DisputeStepFields, NewDispute } from "../domain/records.ts";
import type { DisputeStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

type RawRow = Omit<DisputeRow, "amount" | "hold_amount" | "refund_amount" | "fee"> & {
  amount: string;
  hold_amount: string;
  refund_amount: string | null;
  fee: string;
};
const parse = (r: RawRow): DisputeRow => ({
  ...r,
  amount: parseCents(r.amount),
  hold_amount: parseCents(r.hold_amount),
  refund_amount: r.refund_amount === null ? null : parseCents(r.refund_amount),
  fee: parseCents(r.fee),
});
const one = (rows: RawRow[]): DisputeRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

export async function findDisputeByProcessorId(q: Q, processorDisputeId: string): Promise<DisputeRow | undefined> {
  return one(await q<RawRow[]>`select * from payments.disputes where processor_dispute_id = ${processorDisputeId}`);
}

export async function findDispute(q: Q, id: string): Promise<DisputeRow | undefined> {
  return one(await q<RawRow[]>`select * from payments.disputes where id = ${id}`);
}

/** Records a dispute as `opening` with its hold plan, or finds the one recorded before for the processor's id. */
export async function insertOrFindDispute(q: Q, d: NewDispute): Promise<DisputeRow> {
  const inserted = one(
    await q<RawRow[]>`
    insert into payments.disputes (id, org_id, livemode, processor_dispute_id, checkout_session_id, sale_reference, participant_id, amount, reason, hold_amount, status)
    values (${d.id}, ${d.org_id}, ${d.livemode}, ${d.processor_dispute_id}, ${d.checkout_session_id}, ${d.sale_reference}, ${d.participant_id},
            ${d.amount}, ${d.reason}, ${d.hold_amount}, 'opening')
    on conflict (processor_dispute_id) do nothing
    returning *`,
  );
  if (inserted !== undefined) return inserted;
  const found = await findDisputeByProcessorId(q, d.processor_dispute_id);
  if (found === undefined) throw new Error(`dispute ${d.processor_dispute_id} neither inserted nor found`);
  return found;
}

/** Records a step's result while the dispute is in the given state; undefined when it had moved on. */
export async function updateDisputeStep(q: Q, id: string, inStatus: DisputeStatus, fields: DisputeStepFields): Promise<DisputeRow | undefined> {
  const set = { ...fields, updated_at: new Date() } as Record<string, unknown>;
  return one(await q<RawRow[]>`update payments.disputes set ${q(set as never)} where id = ${id} and status = ${inStatus} returning *`);
}

/** open → closing with the processor's outcome and what losing costs. */
export async function markClosing(q: Q, id: string, f: { outcome: "won" | "lost"; refund_amount: number; fee: number }): Promise<DisputeRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payments.disputes set status = 'closing', outcome = ${f.outcome}, refund_amount = ${f.refund_amount}, fee = ${f.fee}, updated_at = now()
     where id = ${id} and status = 'open'
     returning *`,
  );
}

/**
 * A state move and its outbox event in ONE statement: the event is written only when the dispute moved (the first
 * settler wins). Undefined when the dispute was not in `from`.
 */
export async function settleDispute(q: Q, id: string, from: DisputeStatus, to: DisputeStatus, event: OutboxRowValues): Promise<DisputeRow | undefined> {
  const [r] = await q<RawRow[]>`
    with done as (
      update payments.disputes set status = ${to}, updated_at = now(), closed_at = case when ${to} in ('won', 'lost') then now() else closed_at end
       where id = ${id} and status = ${from}
       returning *
    ), ev as (
      insert into payments.outbox (id, org_id, livemode, type, subject, payload, headers)
      select ${event.id}, ${event.org_id}, ${event.livemode}, ${event.type}, ${event.subject}, ${q.json(event.payload as never)}, ${q.json(event.headers)}
      from done
      returning 1
    )
    select done.* from done`;
  return r === undefined ? undefined : parse(r);
}

export async function disputesInFlight(q: Q, graceMs: number, limit: number): Promise<DisputeRow[]> {
  const rows = await q<RawRow[]>`
    select * from payments.disputes
     where status in ('opening', 'closing') and updated_at < now() - make_interval(secs => ${graceMs / 1000})
     order by updated_at limit ${limit}`;
  return rows.map(parse);
}

export function pgDisputeStore(sql: Sql): DisputeStore {
  return {
    find: (id) => findDispute(sql, id),
    findByProcessorId: (processorDisputeId) => findDisputeByProcessorId(sql, processorDisputeId),
    insertOrFind: (d) => insertOrFindDispute(sql, d),
    updateStep: (id, inStatus, fields) => updateDisputeStep(sql, id, inStatus, fields),
    markClosing: (id, f) => markClosing(sql, id, f),
    settle: async (id, from, to, event) => {
      const done = await settleDispute(sql, id, from, to, outboxRowValues(event));
      if (done !== undefined) wakeOutboxRelay("payments");
      return done;
    },
    inFlight: (graceMs, limit) => disputesInFlight(sql, graceMs, limit),
  };
}
