import { z } from "zod";
import type { ServiceName } from "./rpc.ts";

/** Public event types (docs/api.md, Webhooks): these, and only these, reach webhook endpoints. */
export const PUBLIC_EVENT_TYPES = [
  "checkout.completed",
  "checkout.failed",
  "hold.created",
  "hold.released",
  "payout.created",
  "payout.processing",
  "payout.executed",
  "payout.failed",
  /** A scheduled run paid nothing to a participant, and why (data: participant_id, period, reason). */
  "payout.skipped",
  "refund.created",
  "sale.refunded",
  "refund_request.created",
  "refund_request.completed",
  "refund_request.rejected",
  "refund_request.cancelled",
  "refund_request.failed",
  "dispute.created",
  "dispute.closed",
  /** A participant's payout bank account was set or changed (data: the account as the API shows it, last4 only). */
  "bank_account.updated",
  /** An evaluation's decision is review (a soft policy hit): data `{evaluation, operation, key}` (schemas RiskReviewRequiredData). */
  "risk.review_required",
  /** An operator approved or denied an evaluation under review: data `{evaluation, operation, key, decision, actor, reason}`. */
  "risk.decided",
  /** Invoices (data: the invoice as the API shows it; payment_recorded also `payment`): schemas InvoiceEventData. */
  "invoice.created",
  "invoice.sent",
  "invoice.payment_recorded",
  "invoice.paid",
  "invoice.voided",
  "invoice.overdue",
  /** Tax documents (data: the document as `GET /v1/tax/documents/{id}` shows it, the TIN's last four only). */
  "tax.document.generated",
  "tax.document.filed",
  "tax.document.corrected",
  "sandbox.test",
] as const;
export type PublicEventType = (typeof PUBLIC_EVENT_TYPES)[number];

/**
 * A payout's lifecycle: created when its money left the creator's wallet, processing when it went into a bank
 * file, executed when it is paid, failed when the bank returned it (its money is back in the wallet). Each
 * event's data is the payout object as `GET /v1/payouts/{id}` shows it at that moment.
 */
export const PAYOUT_EVENT_TYPES = ["payout.created", "payout.processing", "payout.executed", "payout.failed"] as const satisfies readonly PublicEventType[];
export type PayoutEventType = (typeof PAYOUT_EVENT_TYPES)[number];

/**
 * Refunds: `refund.created` when a refund completed (data: the refund object as `GET /v1/refunds/{id}` shows it);
 * `sale.refunded` with it (data: the sale, this refund's amount and the sale's remaining refundable amount).
 * A refund request emits one event per move: created, completed (approved and refunded), rejected, cancelled (by a
 * client, or expired unreviewed: `cancelled_by` says which), failed (approved, the ledger refused the refund); data:
 * the refund request, and on completed and failed its refund.
 */
export const REFUND_EVENT_TYPES = ["refund.created", "sale.refunded"] as const satisfies readonly PublicEventType[];
export const REFUND_REQUEST_EVENT_TYPES = [
  "refund_request.created",
  "refund_request.completed",
  "refund_request.rejected",
  "refund_request.cancelled",
  "refund_request.failed",
] as const satisfies readonly PublicEventType[];
export type RefundRequestEventType = (typeof REFUND_REQUEST_EVENT_TYPES)[number];

/**
 * Card disputes (chargebacks) reported by the card processor: `dispute.created` when the creator's share of the
 * disputed sale is held, `dispute.closed` when the processor decided (won: the hold is released; lost: the
 * disputed amount is taken back from both sides like a refund, and the processor's dispute fee is booked to the
 * platform). Data: the dispute as payments records it.
 */
export const DISPUTE_EVENT_TYPES = ["dispute.created", "dispute.closed"] as const satisfies readonly PublicEventType[];

/**
 * KYC decisions are internal events: the public list above names none, and payouts reads them to keep payout
 * eligibility current. Their data never carries personal data: ids, statuses, the actor and the reason.
 */
/**
 * Risk reviews: `risk.review_required` when a soft policy hit puts a movement under review, `risk.decided` when an
 * operator approved or denied it (`admin risk approve|deny`); the caller holding the movement (a payout under
 * review) pays or fails it on `risk.decided`. Data: schemas RiskReviewRequiredData and RiskDecidedData.
 */
export const RISK_EVENT_TYPES = ["risk.review_required", "risk.decided"] as const satisfies readonly PublicEventType[];
export type RiskEventType = (typeof RISK_EVENT_TYPES)[number];

/** Invoices: created, sent (the receivable posted), a payment recorded, paid in full, voided, past its due date. */
export const INVOICE_EVENT_TYPES = [
  "invoice.created",
  "invoice.sent",
  "invoice.payment_recorded",
  "invoice.paid",
  "invoice.voided",
  "invoice.overdue",
] as const satisfies readonly PublicEventType[];
export type InvoiceEventType = (typeof INVOICE_EVENT_TYPES)[number];
/**
 * Tax documents: `generated` when a year's generation made or updated a draft, `filed` when it was marked filed,
 * `corrected` when a filed document got its corrected successor (data names both).
 */
export const TAX_EVENT_TYPES = ["tax.document.generated", "tax.document.filed", "tax.document.corrected"] as const satisfies readonly PublicEventType[];
export type TaxEventType = (typeof TAX_EVENT_TYPES)[number];

export const KYC_EVENT_TYPES = ["kyc.submitted", "kyc.approved", "kyc.rejected", "kyc.suspended"] as const;
export type KycEventType = (typeof KYC_EVENT_TYPES)[number];
/** Internal event types never reach webhooks; they live under `evt.internal.`. */
/** An org's sandbox clock moved (`data: {org_id, now, advanced_by_seconds}`): each service's copy follows it (service-kit clock.ts). */
export const SANDBOX_CLOCK_ADVANCED = "sandbox_clock.advanced";
/** The data of SANDBOX_CLOCK_ADVANCED: how far ahead of real time the org's sandbox now runs, in all. */
export const SandboxClockAdvanced = z.object({ org_id: z.string().min(1).max(255), now: z.string(), advanced_by_seconds: z.number().int().min(0) });
export const INTERNAL_EVENT_TYPES = ["ledger.transaction.posted", SANDBOX_CLOCK_ADVANCED, ...KYC_EVENT_TYPES] as const;
export type InternalEventType = (typeof INTERNAL_EVENT_TYPES)[number];
export type EventType = PublicEventType | InternalEventType;

export function isPublicEventType(t: string): t is PublicEventType {
  return (PUBLIC_EVENT_TYPES as readonly string[]).includes(t);
}

/**
 * The one service whose outbox emits each event type, by the type's first segment (`payout.created` → payouts).
 * NATS lets only the owner publish the type's subjects (nats-permissions.ts) and the webhooks fan-out drops an event
 * whose source is not its owner (ADR 0011). A new domain of events is a line here, then `npm run nats:config`.
 */
export const EVENT_OWNERS: Readonly<Record<string, ServiceName>> = {
  checkout: "payments",
  dispute: "payments",
  hold: "ledger",
  ledger: "ledger",
  payout: "payouts",
  bank_account: "payouts",
  refund: "refunds",
  refund_request: "refunds",
  sale: "refunds",
  kyc: "kyc",
  risk: "risk",
  invoice: "invoicing",
  tax: "tax",
  sandbox: "webhooks",
  sandbox_clock: "ledger",
};

/**
 * The sandbox test event (`POST /v1/sandbox/webhooks/test`) may carry any public type; webhooks emits it, in sandbox
 * only. Webhooks signs and sends every delivery anyway, so this trusts it with nothing it does not already hold.
 */
export const SANDBOX_TEST_EVENT_SOURCE: ServiceName = "webhooks";

/** The service that owns an event type (EVENT_OWNERS), or undefined for a type no service emits. */
export function eventOwner(type: string): ServiceName | undefined {
  const domain = type.split(".", 1)[0] ?? "";
  return Object.hasOwn(EVENT_OWNERS, domain) ? EVENT_OWNERS[domain] : undefined;
}

export const EVENTS_STREAM = "EVENTS";
/** Stream limits: explicit max age and de-duplication window (nats-server 2.9 has no per-message TTL). */
export const EVENTS_MAX_AGE_MS = 7 * 24 * 3600 * 1000;
export const EVENTS_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

export function eventsStreamName(prefix: string): string {
  // Stream names may not contain dots; subject prefixes end with one.
  return `${prefix.replace(/[^A-Za-z0-9_-]/g, "_")}${EVENTS_STREAM}`;
}

/** `evt.<domain>.<event>` for public events, `evt.internal.<…>` for internal ones. */
export function eventSubject(prefix: string, type: EventType): string {
  return isPublicEventType(type) ? `${prefix}evt.${type}` : `${prefix}evt.internal.${type}`;
}

export function eventsSubjectFilter(prefix: string): string {
  return `${prefix}evt.>`;
}

/** The event envelope on the wire (stream messages) and in outbox rows. */
export const EventEnvelope = z.object({
  id: z.string(),
  type: z.string(),
  org_id: z.string(),
  livemode: z.boolean(),
  created_at: z.string(),
  /** Increasing per org and environment (per source service), for ordering on the receiver. */
  sequence: z.number().int(),
  source: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;
