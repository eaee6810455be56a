/**
 * Card disputes (chargebacks) of live checkout sales, from the processor's `charge.dispute.created` and
 * `charge.dispute.closed`, per docs/architecture.md, "Money across services": each step records its intent (the
 * dispute's state and plan) first, then asks the ledger with references derived from the dispute's id (every post
 * is idempotent), then moves the state and writes the event in one statement. The reconciler re-drives disputes
 * left `opening` or `closing`.
 *
 * - Opened: a hold on the creator's share of the disputed amount (at most what the creator has available), so it
 *   cannot be paid out while the dispute runs; `dispute.created`.
 * - Won (or closed with a warning only): the hold is released; `dispute.closed`.
 * - Lost: the hold is released, the disputed amount is taken back from both sides like a refund (the ledger's
 *   refund kind with refund_from both: creator part from the creator, the rest from platform revenue and sales
 *   tax), and the processor's dispute fee is booked from platform cash to processing_fees; `dispute.closed`.
 */
import { newId, type DomainError, type PostRequestInput, type Tenant } from "@treasury/contracts";
import { disputeParts } from "@treasury/money-rules";
import { postAndSettle } from "@treasury/service-kit";
import { checkoutSplit } from "../domain/checkout-sale.ts";
import type { DisputeRow, DisputeStatus, DisputeStepFields } from "../domain/records.ts";
import type { PaymentsDeps } from "./deps.ts";
import { dropReport } from "./drop-report.ts";

/** What the worker reads of the processor's dispute object. */
export interface ProcessorDispute {
  id: string;
  amount: number;
  paymentIntent: string | null;
  charge: string | null;
  reason: string | null;
  status: string;
  /** Sum of the fees of the dispute's balance transactions (what the processor charged for it). */
  fee: number;
}

/** Processor statuses that close a dispute in the merchant's favour: the money stays. */
const KEPT = new Set(["won", "warning_closed", "prevented"]);
/** Re-plans of the hold when the creator's available balance changed under it. */
const HOLD_PLANS_MAX = 3;

export function presentDispute(d: DisputeRow): Record<string, unknown> {
  return {
    id: d.id,
    object: "dispute",
    processor_dispute_id: d.processor_dispute_id,
    checkout_session_id: d.checkout_session_id,
    sale_reference: d.sale_reference,
    participant_id: d.participant_id,
    amount_cents: d.amount,
    currency: d.currency,
    reason: d.reason,
    status: d.status === "opening" ? "open" : d.status === "closing" ? "open" : d.status,
    outcome: d.outcome,
    hold_id: d.hold_id,
    hold_amount_cents: d.hold_amount,
    refund_amount_cents: d.outcome === "lost" ? d.refund_amount : null,
    refund_transaction_id: d.refund_transaction_id,
    dispute_fee_cents: d.fee,
    livemode: d.livemode,
    created_at: d.created_at.toISOString(),
    closed_at: d.closed_at?.toISOString() ?? null,
  };
}

const tenantOfDispute = (d: DisputeRow): Tenant => ({ orgId: d.org_id, livemode: d.livemode });

/** While the ledger's answer is unknown the dispute stays in its step; the reconciler drives it again. */
const PENDING_MESSAGE = "The ledger did not answer in time; the dispute is driven again";

async function creatorAvailable(deps: PaymentsDeps, tenant: Tenant, participantId: string): Promise<number> {
  const p = await deps.ledger.participantInfo(tenant, participantId);
  return (await deps.ledger.getWallet(tenant, p.wallet_id)).available_balance;
}

/** Records a step's result while the dispute is in `status` (a dispute that moved on is answered with it). */
async function recordStep(deps: PaymentsDeps, row: DisputeRow, status: DisputeStatus, fields: DisputeStepFields): Promise<DisputeRow> {
  return (await deps.disputes.updateStep(row.id, status, fields)) ?? { ...row, ...fields };
}

/** A step whose ledger post is refused is the caller's answer as it is. */
const rethrow = (e: DomainError): Promise<never> => Promise.reject(e);

function holdRequest(row: DisputeRow): PostRequestInput {
  return {
    org_id: row.org_id,
    livemode: row.livemode,
    kind: "dispute_hold",
    reference_id: `dispute:${row.id}`,
    description: `Dispute ${row.processor_dispute_id} of ${row.sale_reference}`,
    postings: [],
    holds_create: [
      {
        wallet: { participant_id: row.participant_id },
        amount: row.hold_amount,
        reference_id: `dispute_hold:${row.id}`,
        reason_code: "dispute",
        description: `Disputed sale ${row.sale_reference}`,
      },
    ],
    metadata: { dispute_id: row.id, processor_dispute_id: row.processor_dispute_id },
  };
}

/** One plan of the hold: posted and recorded, or (the creator's balance moved under it) planned again, smaller. */
function holdStep(deps: PaymentsDeps, row: DisputeRow, plan: number): Promise<DisputeRow> {
  return postAndSettle({
    post: () => deps.ledger.post(holdRequest(row)),
    settle: async (r) => {
      const holdId = r.holds_created[0]?.hold_id ?? null;
      const held = (await deps.disputes.updateStep(row.id, "opening", { hold_id: holdId, hold_transaction_id: r.transaction_id })) ?? row;
      return held.hold_id === null ? { ...held, hold_id: holdId } : held;
    },
    isDefinitive: (e) => e.code === "insufficient_balance" && plan < HOLD_PLANS_MAX,
    refused: async () => {
      const amount = Math.min(row.hold_amount, await creatorAvailable(deps, tenantOfDispute(row), row.participant_id));
      return (await deps.disputes.updateStep(row.id, "opening", { hold_amount: amount })) ?? row;
    },
    pendingMessage: PENDING_MESSAGE,
  });
}

/** The hold of an opening dispute; a plan the creator's balance no longer covers is made again, smaller. */
async function placeHold(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  for (let plan = 0; row.hold_amount > 0 && row.hold_id === null; plan++) row = await holdStep(deps, row, plan);
  return row;
}

async function settle(deps: PaymentsDeps, d: DisputeRow, from: DisputeStatus, to: DisputeStatus): Promise<DisputeRow> {
  const now = deps.now();
  const moved: DisputeRow = { ...d, status: to, updated_at: now, closed_at: to === "won" || to === "lost" ? now : d.closed_at };
  const event = {
    type: to === "open" ? ("dispute.created" as const) : ("dispute.closed" as const),
    org_id: d.org_id,
    livemode: d.livemode,
    data: presentDispute(moved),
  };
  const done = await deps.disputes.settle(d.id, from, to, event);
  if (done !== undefined) return done;
  return (await deps.disputes.find(d.id)) ?? d;
}

/** What remains refundable of the sale, as the ledger's refusal of a larger refund says; undefined for other refusals. */
function remainingOf(e: DomainError): number | undefined {
  if (e.code === "refund_amount_exceeds_remaining") return Number(e.extra?.["remaining_amount"] ?? 0);
  if (e.code === "sale_already_fully_refunded" || e.code === "sale_already_reversed") return 0;
  return undefined;
}

/** One attempt of a lost dispute's refund: posted and recorded, or cut to what remains of the sale. */
function takeBackStep(deps: PaymentsDeps, row: DisputeRow): Promise<DisputeRow> {
  const planned = row.refund_amount ?? 0;
  return postAndSettle({
    post: async () =>
      (
        await deps.ledger.post({
          org_id: row.org_id,
          livemode: row.livemode,
          kind: "refund",
          reference_id: `dispute:${row.id}`,
          description: `Lost dispute ${row.processor_dispute_id} of ${row.sale_reference}`,
          metadata: { dispute_id: row.id, processor_dispute_id: row.processor_dispute_id },
          refund: { sale_reference: row.sale_reference, amount: planned, refund_from: "both", shortfall: "receivable", reason: "dispute lost" },
        })
      ).transaction_id,
    settle: (txn) => recordStep(deps, row, "closing", { refund_transaction_id: txn }),
    isDefinitive: (e) => {
      const remaining = remainingOf(e);
      return remaining !== undefined && Number.isSafeInteger(remaining) && remaining < planned;
    },
    refused: async (e) => (await deps.disputes.updateStep(row.id, "closing", { refund_amount: remainingOf(e) ?? 0 })) ?? row,
    pendingMessage: PENDING_MESSAGE,
  });
}

/** The refund a lost dispute books; a sale refunded meanwhile gives back what remains of it, at most. */
async function takeBack(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  while ((row.refund_amount ?? 0) > 0 && row.refund_transaction_id === null) row = await takeBackStep(deps, row);
  return row;
}

/** The dispute's hold is released; one released by hand meanwhile leaves nothing to release. */
function releaseHold(deps: PaymentsDeps, row: DisputeRow, holdId: string): Promise<DisputeRow> {
  return postAndSettle({
    post: async () =>
      (
        await deps.ledger.post({
          org_id: row.org_id,
          livemode: row.livemode,
          kind: "dispute_release",
          reference_id: `dispute_release:${row.id}`,
          holds_release: [holdId],
          metadata: { dispute_id: row.id },
        })
      ).transaction_id,
    settle: (txn) => recordStep(deps, row, "closing", { release_transaction_id: txn }),
    isDefinitive: (e) => e.code === "hold_already_released",
    refused: () => recordStep(deps, row, "closing", { release_transaction_id: "released_elsewhere" }),
    pendingMessage: PENDING_MESSAGE,
  });
}

/** The processor's dispute fee, from platform cash to processing fees. */
function chargeFee(deps: PaymentsDeps, row: DisputeRow): Promise<DisputeRow> {
  return postAndSettle({
    post: async () =>
      (
        await deps.ledger.post({
          org_id: row.org_id,
          livemode: row.livemode,
          kind: "dispute_fee",
          reference_id: `dispute_fee:${row.id}`,
          description: `Processor fee of dispute ${row.processor_dispute_id}`,
          postings: [{ debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: row.fee }],
          metadata: { dispute_id: row.id },
        })
      ).transaction_id,
    settle: (txn) => recordStep(deps, row, "closing", { fee_transaction_id: txn }),
    refused: rethrow,
    pendingMessage: PENDING_MESSAGE,
  });
}

/** Steps 2 and 3 of whichever step the dispute is in. Used by the processor's events and the reconciler. */
export async function driveDispute(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  if (row.status === "opening") {
    row = await placeHold(deps, row);
    row = await settle(deps, row, "opening", "open");
  }
  if (row.status !== "closing") return row;
  if (row.hold_id !== null && row.release_transaction_id === null) row = await releaseHold(deps, row, row.hold_id);
  if (row.outcome === "lost") {
    row = await takeBack(deps, row);
    if (row.fee > 0 && row.fee_transaction_id === null) row = await chargeFee(deps, row);
  }
  return settle(deps, row, "closing", row.outcome === "lost" ? "lost" : "won");
}

function otherEnvironment(deps: PaymentsDeps, pd: ProcessorDispute, checkoutId: string, stored: boolean, livemode: boolean): string {
  return dropReport(
    deps,
    "livemode_mismatch",
    { processor_dispute_id: pd.id, checkout_session_id: checkoutId, report_livemode: livemode, stored_livemode: stored },
    `dispute ${pd.id} is not of checkout ${checkoutId}'s environment`,
  );
}

/**
 * Records a new dispute of one of our live sales (or finds it). Answers why not when the payment is not ours, or
 * when the report (of environment `livemode`) is not of the sale's environment: nothing is held or taken back.
 */
async function recordDispute(deps: PaymentsDeps, pd: ProcessorDispute, livemode: boolean): Promise<DisputeRow | string> {
  const known = await deps.disputes.findByProcessorId(pd.id);
  if (known !== undefined) return known.livemode === livemode ? known : otherEnvironment(deps, pd, known.checkout_session_id, known.livemode, livemode);
  const sale = await deps.checkouts.findByPayment(pd.paymentIntent, pd.charge);
  if (sale === undefined || sale.status !== "completed" || sale.ledger_reference === null) return `dispute ${pd.id} is not of one of our sales`;
  if (sale.livemode !== livemode) return otherEnvironment(deps, pd, sale.id, sale.livemode, livemode);
  // The creator's part of the disputed amount, pro rata to the sale's split after its fee: as a refund of it would take.
  const disputed = disputeParts({ gross: sale.amount, creatorAmount: checkoutSplit(sale).creatorAmount }, pd.amount);
  const creatorShare = disputed.fromCreator;
  const available = creatorShare > 0 ? await creatorAvailable(deps, { orgId: sale.org_id, livemode: sale.livemode }, sale.participant_id) : 0;
  return deps.disputes.insertOrFind({
    id: newId("dsp"),
    org_id: sale.org_id,
    livemode: sale.livemode,
    processor_dispute_id: pd.id,
    checkout_session_id: sale.id,
    sale_reference: sale.ledger_reference,
    participant_id: sale.participant_id,
    amount: disputed.amount,
    reason: pd.reason,
    hold_amount: Math.max(0, Math.min(creatorShare, available)),
  });
}

export async function openDispute(deps: PaymentsDeps, pd: ProcessorDispute, livemode: boolean): Promise<string> {
  const row = await recordDispute(deps, pd, livemode);
  if (typeof row === "string") return row;
  const done = await driveDispute(deps, row);
  return `dispute ${done.id} ${done.status}`;
}

export async function closeDispute(deps: PaymentsDeps, pd: ProcessorDispute, livemode: boolean): Promise<string> {
  const recorded = await recordDispute(deps, pd, livemode);
  if (typeof recorded === "string") return recorded;
  let row = recorded;
  if (row.status === "opening") row = await driveDispute(deps, row);
  if (row.status === "open") {
    const outcome = KEPT.has(pd.status) ? "won" : pd.status === "lost" ? "lost" : undefined;
    if (outcome === undefined) return `dispute ${row.id} closed with status ${pd.status}: nothing to do`;
    row =
      (await deps.disputes.markClosing(row.id, { outcome, refund_amount: outcome === "lost" ? row.amount : 0, fee: outcome === "lost" ? pd.fee : 0 })) ??
      (await deps.disputes.find(row.id)) ??
      row;
  }
  const done = await driveDispute(deps, row);
  return `dispute ${done.id} ${done.status}`;
}
