/** SQL of live wallet top-ups paid through the processor's hosted checkout. */
import { parseCents } from "@treasury/contracts";
import type { NewTopup, TopupRow, TopupStatus } from "../domain/records.ts";
import type { TopupStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

type RawRow = Omit<TopupRow, "amount" | "processing_fee"> & { amount: string; processing_fee: string };
const parse = (r: RawRow): TopupRow => ({ ...r, amount: parseCents(r.amount), processing_fee: parseCents(r.processing_fee) });
const one = (rows: RawRow[]): TopupRow | undefined => (rows[0] === undefined ? undefined : parse(rows[0]));

/** The top-up of one form render: inserted, or the one an earlier submit of the same form made. */
export async function insertOrFindTopup(q: Q, t: NewTopup): Promise<TopupRow> {
  const inserted = one(
    await q<RawRow[]>`
    insert into payments.wallet_topups (id, org_id, livemode, wallet_session_id, wallet_id, amount, nonce, status)
    values (${t.id}, ${t.org_id}, ${t.livemode}, ${t.wallet_session_id}, ${t.wallet_id}, ${t.amount}, ${t.nonce}, 'pending')
    on conflict (org_id, livemode, wallet_session_id, nonce) do nothing
    returning *`,
  );
  if (inserted !== undefined) return inserted;
  const found = one(
    await q<RawRow[]>`
    select * from payments.wallet_topups
     where org_id = ${t.org_id} and livemode = ${t.livemode} and wallet_session_id = ${t.wallet_session_id} and nonce = ${t.nonce}`,
  );
  if (found === undefined) throw new Error(`top-up of form ${t.nonce} neither inserted nor found`);
  return found;
}

/** The processor's session of a top-up, and when to ask the processor about it if its events are late. */
export async function setTopupCheckout(q: Q, id: string, processorSessionId: string, checkoutUrl: string, checkAt: Date): Promise<void> {
  await q`
    update payments.wallet_topups
       set processor_session_id = ${processorSessionId}, checkout_url = ${checkoutUrl}, processor_check_at = ${checkAt}, updated_at = now()
     where id = ${id} and processor_session_id is null`;
}

export async function findTopup(q: Q, id: string): Promise<TopupRow | undefined> {
  return one(await q<RawRow[]>`select * from payments.wallet_topups where id = ${id}`);
}

/** pending → completing with the processor's facts and the ledger reference; undefined when it was not pending. */
export async function markTopupCompleting(
  q: Q,
  id: string,
  f: { ledger_reference: string; processor_session_id: string; processing_fee: number; processor_payment_intent: string | null },
): Promise<TopupRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payments.wallet_topups
       set status = 'completing', ledger_reference = ${f.ledger_reference}, processor_session_id = coalesce(processor_session_id, ${f.processor_session_id}),
           processing_fee = ${f.processing_fee}, processor_payment_intent = ${f.processor_payment_intent}, updated_at = now()
     where id = ${id} and status = 'pending'
     returning *`,
  );
}

export async function settleTopup(q: Q, id: string, transactionId: string): Promise<TopupRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payments.wallet_topups set status = 'completed', transaction_id = ${transactionId}, completed_at = now(), updated_at = now()
     where id = ${id} and status = 'completing'
     returning *`,
  );
}

export async function failTopup(q: Q, id: string, from: TopupStatus, reason: string): Promise<TopupRow | undefined> {
  return one(
    await q<RawRow[]>`
    update payments.wallet_topups set status = 'failed', failure_reason = ${reason}, updated_at = now()
     where id = ${id} and status = ${from}
     returning *`,
  );
}

export async function stuckTopups(q: Q, graceMs: number, limit: number): Promise<TopupRow[]> {
  const rows = await q<RawRow[]>`
    select * from payments.wallet_topups
     where status = 'completing' and updated_at < now() - make_interval(secs => ${graceMs / 1000})
     order by updated_at limit ${limit}`;
  return rows.map(parse);
}

export function pgTopupStore(sql: Sql): TopupStore {
  return {
    insertOrFind: (t) => insertOrFindTopup(sql, t),
    setCheckout: (id, processorSessionId, checkoutUrl, checkAt) => setTopupCheckout(sql, id, processorSessionId, checkoutUrl, checkAt),
    find: (id) => findTopup(sql, id),
    markCompleting: (id, f) => markTopupCompleting(sql, id, f),
    settle: (id, transactionId) => settleTopup(sql, id, transactionId),
    fail: (id, from, reason) => failTopup(sql, id, from, reason),
    stuck: (graceMs, limit) => stuckTopups(sql, graceMs, limit),
  };
}
