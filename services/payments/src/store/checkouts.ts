/** SQL of checkout sessions. int8 columns are parsed into numbers once, here, with safe-integer checks. */
import { parseCents } from "@treasury/contracts";
import type { FeePayer } from "@treasury/money-rules";
import type { OutboxRowValues } from "@treasury/service-kit";
import type postgres from "postgres";
import type { Scope } from "../adapters/ledger.ts";
import type { Q } from "./db.ts";

export type CheckoutStatus = "pending" | "completing" | "completed" | "failed";
export type CheckoutMode = "session" | "direct" | "direct_funded_wallet";

export interface CheckoutRow {
  id: string;
  org_id: string;
  livemode: boolean;
  mode: CheckoutMode;
  provider: "soledgic" | "stripe";
  payment_rail: "card" | "usdc";
  status: CheckoutStatus;
  participant_id: string;
  merchant_name: string;
  amount: number;
  currency: string;
  sales_tax: number;
  creator_bps: number;
  creator_amount: number;
  platform_amount: number;
  hold_funds: boolean;
  product_id: string | null;
  product_name: string | null;
  customer_email: string | null;
  customer_id: string | null;
  buyer_user_id: string | null;
  buyer_wallet_id: string | null;
  payment_method_id: string | null;
  success_url: string | null;
  cancel_url: string | null;
  metadata: Record<string, string>;
  idempotency_key: string | null;
  request_hash: string;
  create_response: Record<string, unknown> | null;
  checkout_url: string | null;
  payment_id: string | null;
  ledger_reference: string | null;
  sale_transaction_id: string | null;
  hold_id: string | null;
  completion_source: string | null;
  sandbox_idempotency_key: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** The card processor's fee of a live payment (0 otherwise), known when completion starts. */
  processing_fee: number;
  processing_fee_paid_by: FeePayer;
  processor_payment_intent: string | null;
  processor_charge: string | null;
  /** A live processor session's next check while pending (usecases/check-processor-sessions.ts); null otherwise. */
  processor_check_at: Date | null;
}

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

export type NewCheckout = Omit<
  CheckoutRow,
  | "updated_at"
  | "completed_at"
  | "sale_transaction_id"
  | "hold_id"
  | "failure_code"
  | "failure_reason"
  | "sandbox_idempotency_key"
  | "processing_fee"
  | "processor_payment_intent"
  | "processor_charge"
>;

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

export async function findCheckout(q: Q, s: Scope, id: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`select * from payments.checkout_sessions where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return r === undefined ? undefined : parse(r);
}

/** Hosted pages and processor events: the unguessable id alone names the row; the row names its org and environment. */
export async function findCheckoutForPage(q: Q, id: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`select * from payments.checkout_sessions where id = ${id}`;
  return r === undefined ? undefined : parse(r);
}

export async function findCheckoutByKey(q: Q, s: Scope, key: string): Promise<CheckoutRow | undefined> {
  const [r] = await q<RawRow[]>`
    select * from payments.checkout_sessions where org_id = ${s.orgId} and livemode = ${s.livemode} and idempotency_key = ${key}`;
  return r === undefined ? undefined : parse(r);
}

export async function lockCheckout(q: Q, s: Scope, id: string): Promise<CheckoutRow | undefined> {
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

/** What the card processor reported about a live payment, recorded with the completion intent. */
export interface ProcessorPayment {
  sessionId: string;
  paymentIntent: string | null;
  charge: string | null;
  fee: number;
}

/**
 * pending → completing in one statement (its own commit): only a pending, unexpired session of the scope
 * moves (a payment the processor took completes even past our expiry: the buyer has paid). Undefined when it did
 * not move; the caller reads the row to say why.
 */
export async function markCompleting(
  q: Q,
  s: Scope,
  id: string,
  now: Date,
  fields: {
    ledger_reference: string;
    payment_id_by_mode: { wallet: string; other: string };
    completion_source: string;
    sandbox_idempotency_key: string | null;
    processor: ProcessorPayment | null;
  },
): Promise<CheckoutRow | undefined> {
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
