/** SQL of checkout sessions. int8 columns are parsed into numbers once, here, with safe-integer checks. */
import { parseCents } from "@treasury/contracts";
import type { Tenant } from "@treasury/contracts";
import { outboxRowValues, wakeOutboxRelay, withTx, writeOutbox, type NewEvent, type OutboxRowValues } from "@treasury/service-kit";
import type postgres from "postgres";
import type { CheckoutRow, CheckoutStatus, CompletionIntent, NewCheckout } from "../domain/records.ts";
import type { CheckoutFailure, CheckoutStore, LockedCheckout } from "../usecases/ports.ts";
import type { Q, Sql, Tx } from "./db.ts";

type RawRow = Omit<CheckoutRow, "amount" | "sales_tax" | "creator_amount" | "platform_amount" | "processing_fee"> & {
  amount: string;
  sales_tax: string;
  creator_amount: string;
  platform_amount: string;
  processing_fee: string;
};

function parse(r: RawRow): CheckoutRow {
  return {
    ...r,
    amount: parseCents(r.amount),
    sales_tax: parseCents(r.sales_tax),
    creator_amount: parseCents(r.creator_amount),
    platform_amount: parseCents(r.platform_amount),
    processing_fee: parseCents(r.processing_fee),
  };
}

/** Inserts a session; undefined when the idempotency key is taken (the caller replays the existing one). */
export async function insertCheckout(q: Q, c: NewCheckout): Promise<CheckoutRow | undefined> {
  const rows = await q<RawRow[]>`
    insert into payments.checkout_sessions (id, org_id, livemode, mode, provider, payment_rail, status, participant_id, merchant_name,
      amount, currency, sales_tax, creator_bps, creator_amount, platform_amount, hold_funds, product_id, product_name, customer_email,
      customer_id, buyer_user_id, buyer_wallet_id, payment_method_id, success_url, cancel_url, metadata, idempotency_key, request_hash,
      checkout_url, payment_id, ledger_reference, completion_source, expires_at, created_at, updated_at, create_response, processing_fee_paid_by,
      processor_check_at)
    values (${c.id}, ${c.org_id}, ${c.livemode}, ${c.mode}, ${c.provider}, ${c.payment_rail}, ${c.status}, ${c.participant_id}, ${c.merchant_name},
      ${c.amount}, ${c.currency}, ${c.sales_tax}, ${c.creator_bps}, ${c.creator_amount}, ${c.platform_amount}, ${c.hold_funds}, ${c.product_id},
      ${c.product_name}, ${c.customer_email}, ${c.customer_id}, ${c.buyer_user_id}, ${c.buyer_wallet_id}, ${c.payment_method_id}, ${c.success_url},
      ${c.cancel_url}, ${q.json(c.metadata)}, ${c.idempotency_key}, ${c.request_hash}, ${c.checkout_url}, ${c.payment_id}, ${c.ledger_reference},
      ${c.completion_source}, ${c.expires_at}, ${c.created_at}, ${c.created_at},
      ${c.create_response === null ? null : q.json(c.create_response as postgres.JSONValue)}, ${c.processing_fee_paid_by}, ${c.processor_check_at})
    on conflict (org_id, livemode, idempotency_key) where idempotency_key is not null do nothing
    returning *`;
  const r = rows[0];
  return r === undefined ? undefined : parse(r);
}

export async function findCheckout(q: Q, s: Tenant, id: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`select * from payments.checkout_sessions where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return r === undefined ? undefined : parse(r);
}

/** Hosted pages and processor events: the unguessable id alone names the row; the row names its org and environment. */
export async function findCheckoutForPage(q: Q, id: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`select * from payments.checkout_sessions where id = ${id}`;
  return r === undefined ? undefined : parse(r);
}

export async function findCheckoutByKey(q: Q, s: Tenant, key: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`
    select * from payments.checkout_sessions where org_id = ${s.orgId} and livemode = ${s.livemode} and idempotency_key = ${key}`;
  return r === undefined ? undefined : parse(r);
}

export async function lockCheckout(q: Q, s: Tenant, id: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`
    select * from payments.checkout_sessions where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} for update`;
  return r === undefined ? undefined : parse(r);
}

export async function updateCheckout(
  q: Q,
  id: string,
  fields: Partial<Record<keyof CheckoutRow, string | number | boolean | Date | null>>,
  onlyIfStatus?: CheckoutStatus,
): Promise<CheckoutRow | undefined> {
  const set = { ...fields, updated_at: new Date() } as Record<string, unknown>;
  const rows =
    onlyIfStatus === undefined
      ? await q<RawRow[]>`update payments.checkout_sessions set ${q(set as never)} where id = ${id} returning *`
      : await q<RawRow[]>`update payments.checkout_sessions set ${q(set as never)} where id = ${id} and status = ${onlyIfStatus} returning *`;
  const r = rows[0];
  return r === undefined ? undefined : parse(r);
}

/**
 * completing → completed and its outbox event in ONE statement (one round trip, its own commit): the event
 * row is inserted only when the session moved. Undefined when it was not `completing` (another settler won).
 */
export async function settleCompleted(
  q: Q,
  id: string,
  fields: { sale_transaction_id: string; hold_id: string | null; completed_at: Date },
  event: OutboxRowValues,
): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`
    with done as (
      update payments.checkout_sessions
         set status = 'completed', sale_transaction_id = ${fields.sale_transaction_id}, hold_id = ${fields.hold_id},
             completed_at = ${fields.completed_at}, updated_at = ${new Date()}
       where id = ${id} and status = 'completing'
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

/**
 * pending → completing in one statement (its own commit): only a pending, unexpired session of the scope
 * moves (a payment the processor took completes even past our expiry: the buyer has paid). Undefined when it did
 * not move; the caller reads the row to say why.
 */
export async function markCompleting(q: Q, s: Tenant, id: string, now: Date, fields: CompletionIntent): Promise<CheckoutRow | undefined> {
  const p = fields.processor;
  const [r] = await q<RawRow[]>`
    update payments.checkout_sessions
       set status = 'completing', ledger_reference = ${fields.ledger_reference},
           payment_id = coalesce(payment_id, ${p?.sessionId ?? null}, case when mode = 'direct_funded_wallet' then ${fields.payment_id_by_mode.wallet} else ${fields.payment_id_by_mode.other} end),
           completion_source = ${fields.completion_source}, sandbox_idempotency_key = ${fields.sandbox_idempotency_key}, updated_at = ${now},
           processing_fee = ${p?.fee ?? 0}, processor_payment_intent = ${p?.paymentIntent ?? null}, processor_charge = ${p?.charge ?? null}
     where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'pending' and (${p !== null} or expires_at > ${now})
     returning *`;
  return r === undefined ? undefined : parse(r);
}

/** The live sale a processor's payment (or its charge) paid for. */
export async function findCheckoutByPayment(q: Q, paymentIntent: string | null, charge: string | null): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`
    select * from payments.checkout_sessions
     where (${paymentIntent}::text is not null and processor_payment_intent = ${paymentIntent})
        or (${charge}::text is not null and processor_charge = ${charge})
     limit 1`;
  return r === undefined ? undefined : parse(r);
}

export async function storeCreateResponse(q: Q, id: string, response: Record<string, unknown>): Promise<void> {
  await q`update payments.checkout_sessions set create_response = ${q.json(response as postgres.JSONValue)} where id = ${id} and create_response is null`;
}

/** Sessions stuck in `completing` for longer than the grace period, oldest first. */
export async function stuckCompleting(q: Q, graceMs: number, limit: number): Promise<CheckoutRow[]> {
  const rows = await q<RawRow[]>`
    select * from payments.checkout_sessions
    where status = 'completing' and updated_at < now() - make_interval(secs => ${graceMs / 1000})
    order by updated_at limit ${limit}`;
  return rows.map(parse);
}

/** Fails a session (only from `onlyIfStatus` when given) and writes its event, in the caller's transaction. */
async function failWithEvent(
  tx: Tx,
  id: string,
  failure: CheckoutFailure,
  event: (failed: CheckoutRow) => NewEvent,
  onlyIfStatus?: CheckoutStatus,
): Promise<CheckoutRow | undefined> {
  const failed = await updateCheckout(tx, id, { status: "failed", ...failure }, onlyIfStatus);
  if (failed !== undefined) await writeOutbox(tx, "payments", event(failed));
  return failed;
}

export function pgCheckoutStore(sql: Sql): CheckoutStore {
  return {
    insert: (c) => insertCheckout(sql, c),
    find: (tenant, id) => findCheckout(sql, tenant, id),
    findForPage: (id) => findCheckoutForPage(sql, id),
    findByKey: (tenant, key) => findCheckoutByKey(sql, tenant, key),
    findByPayment: (paymentIntent, charge) => findCheckoutByPayment(sql, paymentIntent, charge),
    storeCreateResponse: (id, response) => storeCreateResponse(sql, id, response),
    markCompleting: (tenant, id, now, intent) => markCompleting(sql, tenant, id, now, intent),
    locked: (tenant, id, fn) =>
      withTx(sql, async (tx) => {
        const row = await lockCheckout(tx, tenant, id);
        const locked: LockedCheckout = {
          markCompleting: (now, intent) => markCompleting(tx, tenant, id, now, intent),
          fail: (failure, event) => failWithEvent(tx, id, failure, event),
        };
        return fn(row, locked);
      }),
    settleCompleted: async (id, fields, event) => {
      const done = await settleCompleted(sql, id, fields, outboxRowValues(event));
      if (done !== undefined) wakeOutboxRelay("payments");
      return done;
    },
    failCompleting: async (id, failure, event) => {
      await withTx(sql, (tx) => failWithEvent(tx, id, failure, event, "completing"));
    },
    stuckCompleting: (graceMs, limit) => stuckCompleting(sql, graceMs, limit),
  };
}
