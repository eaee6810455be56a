/**
 * The work each recorded processor event asks for (usecases/receive-processor-event.ts records them; the worker in
 * usecases/processor-worker.ts runs this). Every action is idempotent and order-tolerant, so an event handled
 * twice, or events arriving in any order, move money once:
 * - `checkout.session.completed` / `…async_payment_succeeded` (paid): completes the checkout session (or wallet
 *   top-up) it names, through the same intent → ledger → settle path as every completion, with the processor's fee
 *   (from the event's expanded payment, else read from the processor's API);
 * - `checkout.session.expired` / `…async_payment_failed`: a still-pending session (or top-up) fails, with
 *   `checkout.failed`; a completed one stays completed;
 * - `refund.*`, `charge.refund.updated`, `charge.refunded`: settle card refunds (usecases/processor-refunds.ts);
 * - `charge.dispute.created` / `…closed`: disputes (usecases/disputes.ts).
 * A session's report acts only on the session it is about (domain/processor-match.ts): its livemode, processor
 * session id and, when paid, currency and amount must be the stored ones; a refund's or dispute's event must carry
 * the livemode of the refund or sale it names. Else it is dropped (usecases/drop-report.ts): counted
 * (`processor_events_dropped_total{reason}`) and logged, and no money moves.
 * Answers a short description of what was done (stored with the event). Throws when the work must be retried.
 */
import { DomainError } from "@treasury/contracts";
import { z } from "zod";
import { isUuid } from "../domain/ids.ts";
import { mismatchOf, type StoredSession } from "../domain/processor-match.ts";
import { refundStatusOf } from "../domain/processor-refund.ts";
import type { CheckoutRow, ProcessorEventRow, ProcessorPayment, TopupRow } from "../domain/records.ts";
import { completeCheckout } from "./complete-checkout.ts";
import type { PaymentsDeps } from "./deps.ts";
import { closeDispute, openDispute, type ProcessorDispute } from "./disputes.ts";
import { dropReport } from "./drop-report.ts";
import { failCheckout } from "./fail-checkout.ts";
import { ProcessorUnavailable, type ProcessorRefund } from "./ports.ts";
import { applyChargeRefunded, applyProcessorRefund } from "./processor-refunds.ts";
import { completeTopup, failPendingTopup } from "./wallet-topup.ts";

const Id = z.string().min(1).max(255);
const Expandable = z.union([Id, z.object({ id: Id }).loose()]);
const Metadata = z.record(z.string(), z.string()).nullish();

export const CheckoutSessionObject = z.object({
  id: Id,
  /** open, complete or expired. */
  status: z.string().nullish(),
  payment_status: z.string().nullish(),
  amount_total: z.number().int().nullish(),
  currency: z.string().nullish(),
  client_reference_id: z.string().nullish(),
  metadata: Metadata,
  payment_intent: z.unknown().optional(),
  livemode: z.boolean().nullish(),
});
export type CheckoutSessionObject = z.infer<typeof CheckoutSessionObject>;

/**
 * A processor session as reported, with the environment the report speaks for: the signed event's `livemode` (or
 * the session's own, when it was read back from the processor); null when the two disagree or neither says.
 */
export interface SessionReport {
  session: CheckoutSessionObject;
  livemode: boolean | null;
}

const RefundObject = z.object({
  id: Id,
  status: z.string().nullish(),
  failure_reason: z.string().nullish(),
  payment_intent: Expandable.nullish(),
  metadata: Metadata,
});
const ChargeObject = z.object({ id: Id, payment_intent: Expandable.nullish(), refunds: z.object({ data: z.array(RefundObject) }).nullish() });
const DisputeObject = z.object({
  id: Id,
  amount: z.number().int().nonnegative(),
  charge: Expandable.nullish(),
  payment_intent: Expandable.nullish(),
  reason: z.string().nullish(),
  status: z.string(),
  balance_transactions: z.array(z.object({ fee: z.number().int() }).loose()).nullish(),
});

const idOf = (v: string | { id: string } | null | undefined): string | null => (v === null || v === undefined ? null : typeof v === "string" ? v : v.id);

function objectOf<T extends z.ZodType>(schema: T, ev: ProcessorEventRow): z.output<T> {
  const data = (ev.payload["data"] as { object?: unknown } | undefined)?.object;
  const parsed = schema.safeParse(data);
  // A malformed object of a type we handle will not become well-formed on a retry: recorded, not retried.
  if (!parsed.success) throw new MalformedEvent(`${ev.type} ${ev.event_id}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

export class MalformedEvent extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MalformedEvent";
  }
}

const ExpandedPayment = z
  .object({
    id: Id,
    latest_charge: z.object({ id: Id, balance_transaction: z.object({ fee: z.number().int().nonnegative() }).loose() }).loose(),
  })
  .loose();

/** The payment of a paid session: its ids and the processor's fee, from the event when expanded, else from the API. */
async function paymentOf(deps: PaymentsDeps, s: CheckoutSessionObject): Promise<ProcessorPayment> {
  const pi = s.payment_intent;
  if (pi === null || pi === undefined) return { sessionId: s.id, paymentIntent: null, charge: null, fee: 0 };
  const expanded = ExpandedPayment.safeParse(pi);
  if (expanded.success) {
    return {
      sessionId: s.id,
      paymentIntent: expanded.data.id,
      charge: expanded.data.latest_charge.id,
      fee: expanded.data.latest_charge.balance_transaction.fee,
    };
  }
  const id = typeof pi === "string" ? pi : idOf(pi as { id: string });
  if (id === null) throw new MalformedEvent(`session ${s.id} has an unreadable payment_intent`);
  if (deps.processor === undefined) throw new ProcessorUnavailable(`no processor credentials to read the fee of payment ${id}`);
  const facts = await deps.processor.paymentFacts(id);
  return { sessionId: s.id, paymentIntent: facts.paymentIntentId, charge: facts.chargeId, fee: facts.fee };
}

async function checkoutOf(deps: PaymentsDeps, s: CheckoutSessionObject): Promise<CheckoutRow | undefined> {
  const ref = s.metadata?.["checkout_session_id"] ?? s.client_reference_id ?? "";
  if (!isUuid(ref)) return undefined;
  const row = await deps.checkouts.findForPage(ref.toLowerCase());
  return row === undefined || row.mode !== "session" ? undefined : row;
}

/** The stored session a report must match: only a checkout at the processor has a processor session to match. */
function storedCheckout(row: CheckoutRow): StoredSession {
  return { livemode: row.livemode, processorSessionId: row.provider === "stripe" ? row.payment_id : null, currency: row.currency, amount: row.amount };
}

function storedTopup(row: TopupRow): StoredSession {
  return { livemode: row.livemode, processorSessionId: row.processor_session_id, currency: row.currency, amount: row.amount };
}

/** Undefined when the report is about the stored session; else the drop's outcome (usecases/drop-report.ts). */
function dropped(
  deps: PaymentsDeps,
  what: { checkout_session_id: string } | { wallet_topup_id: string },
  stored: StoredSession,
  r: SessionReport,
  paid: boolean,
): string | undefined {
  const reason = mismatchOf(stored, { livemode: r.livemode, id: r.session.id, currency: r.session.currency, amount: r.session.amount_total }, paid);
  if (reason === undefined) return undefined;
  return dropReport(
    deps,
    reason,
    { ...what, processor_session_id: r.session.id, report_livemode: r.livemode, stored_livemode: stored.livemode },
    `processor session ${r.session.id} does not match ${"checkout_session_id" in what ? `checkout ${what.checkout_session_id}` : `top-up ${what.wallet_topup_id}`}`,
  );
}

/** A paid processor session: completes its checkout or wallet top-up (also used by usecases/check-processor-sessions.ts). */
export async function sessionPaid(deps: PaymentsDeps, r: SessionReport): Promise<string> {
  const s = r.session;
  if (s.payment_status !== "paid") return `session ${s.id} not paid yet (${s.payment_status ?? "no status"})`;
  const topupId = s.metadata?.["wallet_topup_id"];
  if (topupId !== undefined) {
    const topup = await deps.topups.find(topupId);
    if (topup === undefined) return `no wallet top-up ${topupId}`;
    const drop = dropped(deps, { wallet_topup_id: topup.id }, storedTopup(topup), r, true);
    if (drop !== undefined) return drop;
    return completeTopup(
      deps,
      topup,
      topup.status === "pending" ? await paymentOf(deps, s) : { sessionId: s.id, paymentIntent: null, charge: null, fee: 0 },
      s.amount_total ?? null,
    );
  }
  const row = await checkoutOf(deps, s);
  if (row === undefined) return `no checkout session for processor session ${s.id}`;
  const drop = dropped(deps, { checkout_session_id: row.id }, storedCheckout(row), r, true);
  if (drop !== undefined) return drop;
  if (row.status === "completed") return `checkout ${row.id} already completed`;
  const processor = row.status === "pending" ? await paymentOf(deps, s) : undefined;
  try {
    const done = await completeCheckout(deps, { orgId: row.org_id, livemode: row.livemode }, row.id, { source: "processor", processor });
    return `checkout ${row.id} ${done.status}`;
  } catch (e) {
    // The ledger refused for good (the session is failed, with checkout.failed) or the session had failed before.
    if (e instanceof DomainError && e.code !== "service_timeout" && e.code !== "service_unavailable") {
      deps.log.error({ checkout_session_id: row.id, code: e.code }, "a payment the processor took did not complete its checkout");
      return `checkout ${row.id} not completed: ${e.code}`;
    }
    throw e;
  }
}

/** A processor session that ended unpaid: its still-pending checkout or top-up fails. */
export async function sessionEnded(deps: PaymentsDeps, r: SessionReport, why: "expired" | "payment_failed"): Promise<string> {
  const s = r.session;
  const topupId = s.metadata?.["wallet_topup_id"];
  if (topupId !== undefined) {
    const topup = await deps.topups.find(topupId);
    if (topup === undefined) return `no wallet top-up ${topupId}`;
    return dropped(deps, { wallet_topup_id: topup.id }, storedTopup(topup), r, false) ?? failPendingTopup(deps, topup, why);
  }
  const row = await checkoutOf(deps, s);
  if (row === undefined) return `no checkout session for processor session ${s.id}`;
  // A report of another session, or of the other environment, must not fail a session its buyer may be paying.
  const drop = dropped(deps, { checkout_session_id: row.id }, storedCheckout(row), r, false);
  if (drop !== undefined) return drop;
  try {
    const failed = await failCheckout(
      deps,
      { orgId: row.org_id, livemode: row.livemode },
      row.id,
      why === "expired" ? "The processor's checkout expired unpaid" : "The payment failed",
      `processor_${why}`,
    );
    return `checkout ${row.id} ${failed.status}`;
  } catch (e) {
    // Completed or completing: the payment went through (its own event came first); the session stays paid.
    if (e instanceof DomainError && (e.code === "checkout_not_pending" || e.code === "checkout_in_progress")) return `checkout ${row.id} kept: ${e.code}`;
    throw e;
  }
}

function refundOf(r: z.output<typeof RefundObject>): ProcessorRefund {
  return {
    id: r.id,
    status: refundStatusOf(r.status ?? null),
    failureReason: r.failure_reason ?? null,
    paymentIntentId: idOf(r.payment_intent),
    metadata: r.metadata ?? {},
  };
}

function disputeOf(d: z.output<typeof DisputeObject>): ProcessorDispute {
  const fee = (d.balance_transactions ?? []).reduce((sum, bt) => sum + bt.fee, 0);
  return {
    id: d.id,
    amount: d.amount,
    paymentIntent: idOf(d.payment_intent),
    charge: idOf(d.charge),
    reason: d.reason ?? null,
    status: d.status,
    fee: Math.max(0, fee),
  };
}

/** The event's session with the environment it speaks for: the signed envelope's livemode, unless its object says otherwise. */
function sessionReportOf(ev: ProcessorEventRow): SessionReport {
  const session = objectOf(CheckoutSessionObject, ev);
  const own = session.livemode ?? ev.livemode;
  return { session, livemode: own === ev.livemode ? ev.livemode : null };
}

export async function handleProcessorEvent(deps: PaymentsDeps, ev: ProcessorEventRow): Promise<string> {
  switch (ev.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return sessionPaid(deps, sessionReportOf(ev));
    case "checkout.session.expired":
      return sessionEnded(deps, sessionReportOf(ev), "expired");
    case "checkout.session.async_payment_failed":
      return sessionEnded(deps, sessionReportOf(ev), "payment_failed");
    case "refund.created":
    case "refund.updated":
    case "refund.failed":
    case "charge.refund.updated":
      return applyProcessorRefund(deps, refundOf(objectOf(RefundObject, ev)), ev.livemode);
    case "charge.refunded": {
      const charge = objectOf(ChargeObject, ev);
      return applyChargeRefunded(deps, idOf(charge.payment_intent), (charge.refunds?.data ?? []).map(refundOf), ev.livemode);
    }
    case "charge.dispute.created":
      return openDispute(deps, disputeOf(objectOf(DisputeObject, ev)), ev.livemode);
    case "charge.dispute.closed":
      return closeDispute(deps, disputeOf(objectOf(DisputeObject, ev)), ev.livemode);
    default:
      return `type ${ev.type} is not handled`;
  }
}
