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
import { DomainError, newId, type PostRequestInput } from "@treasury/contracts";
import { disputeParts } from "@treasury/money-rules";
import { outboxRowValues, wakeOutboxRelay } from "@treasury/service-kit";
import { LedgerOutcomeUnknown, type Scope } from "../adapters/ledger.ts";
import { checkoutSplit } from "../domain/checkout-sale.ts";
import { findCheckoutByPayment } from "../store/checkouts.ts";
import {
  findDispute,
  findDisputeByProcessorId,
  insertOrFindDispute,
  markClosing,
  settleDispute,
  updateDisputeStep,
  type DisputeRow,
  type DisputeStatus,
} from "../store/disputes.ts";
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

const scopeOf = (d: DisputeRow): Scope => ({ orgId: d.org_id, livemode: d.livemode });

async function post(deps: PaymentsDeps, req: PostRequestInput): Promise<string> {
  try {
    return (await deps.ledger.post(req)).transaction_id;
  } catch (e) {
    if (e instanceof LedgerOutcomeUnknown) throw new DomainError("service_timeout", "The ledger did not answer in time; the dispute is driven again");
    throw e;
  }
}

async function creatorAvailable(deps: PaymentsDeps, scope: Scope, participantId: string): Promise<number> {
  const p = await deps.ledger.participantInfo(scope, participantId);
  return (await deps.ledger.getWallet(scope, p.wallet_id)).available_balance;
}

/** The hold of an opening dispute; a plan the creator's balance no longer covers is made again, smaller. */
async function placeHold(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  for (let plan = 0; row.hold_amount > 0 && row.hold_id === null; plan++) {
    try {
      const r = await deps.ledger.post({
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
      });
      const holdId = r.holds_created[0]?.hold_id ?? null;
      row = (await updateDisputeStep(deps.sql, row.id, "opening", { hold_id: holdId, hold_transaction_id: r.transaction_id })) ?? row;
      if (row.hold_id === null) row = { ...row, hold_id: holdId };
    } catch (e) {
      if (e instanceof LedgerOutcomeUnknown) throw new DomainError("service_timeout", "The ledger did not answer in time; the dispute is driven again");
      if (!(e instanceof DomainError) || e.code !== "insufficient_balance" || plan >= HOLD_PLANS_MAX) throw e;
      const amount = Math.min(row.hold_amount, await creatorAvailable(deps, scopeOf(row), row.participant_id));
      row = (await updateDisputeStep(deps.sql, row.id, "opening", { hold_amount: amount })) ?? row;
    }
  }
  return row;
}

async function settle(deps: PaymentsDeps, d: DisputeRow, from: DisputeStatus, to: DisputeStatus): Promise<DisputeRow> {
  const now = deps.now();
  const moved: DisputeRow = { ...d, status: to, updated_at: now, closed_at: to === "won" || to === "lost" ? now : d.closed_at };
  const event = outboxRowValues({
    type: to === "open" ? "dispute.created" : "dispute.closed",
    org_id: d.org_id,
    livemode: d.livemode,
    data: presentDispute(moved),
  });
  const done = await settleDispute(deps.sql, d.id, from, to, event);
  if (done !== undefined) {
    wakeOutboxRelay("payments");
    return done;
  }
  return (await findDispute(deps.sql, d.id)) ?? d;
}

/** The refund a lost dispute books; a sale refunded meanwhile gives back what remains of it, at most. */
async function takeBack(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  while ((row.refund_amount ?? 0) > 0 && row.refund_transaction_id === null) {
    try {
      const txn = await post(deps, {
        org_id: row.org_id,
        livemode: row.livemode,
        kind: "refund",
        reference_id: `dispute:${row.id}`,
        description: `Lost dispute ${row.processor_dispute_id} of ${row.sale_reference}`,
        metadata: { dispute_id: row.id, processor_dispute_id: row.processor_dispute_id },
        refund: { sale_reference: row.sale_reference, amount: row.refund_amount ?? 0, refund_from: "both", shortfall: "receivable", reason: "dispute lost" },
      });
      row = (await updateDisputeStep(deps.sql, row.id, "closing", { refund_transaction_id: txn })) ?? { ...row, refund_transaction_id: txn };
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      const remaining =
        e.code === "refund_amount_exceeds_remaining"
          ? Number(e.extra?.["remaining_amount"] ?? 0)
          : e.code === "sale_already_fully_refunded" || e.code === "sale_already_reversed"
            ? 0
            : undefined;
      if (remaining === undefined || !Number.isSafeInteger(remaining) || remaining >= (row.refund_amount ?? 0)) throw e;
      row = (await updateDisputeStep(deps.sql, row.id, "closing", { refund_amount: remaining })) ?? row;
    }
  }
  return row;
}

/** Steps 2 and 3 of whichever step the dispute is in. Used by the processor's events and the reconciler. */
export async function driveDispute(deps: PaymentsDeps, d: DisputeRow): Promise<DisputeRow> {
  let row = d;
  if (row.status === "opening") {
    row = await placeHold(deps, row);
    row = await settle(deps, row, "opening", "open");
  }
  if (row.status !== "closing") return row;
  if (row.hold_id !== null && row.release_transaction_id === null) {
    let txn: string;
    try {
      txn = await post(deps, {
        org_id: row.org_id,
        livemode: row.livemode,
        kind: "dispute_release",
        reference_id: `dispute_release:${row.id}`,
        holds_release: [row.hold_id],
        metadata: { dispute_id: row.id },
      });
    } catch (e) {
      // Released by hand meanwhile: nothing left to release.
      if (!(e instanceof DomainError) || e.code !== "hold_already_released") throw e;
      txn = "released_elsewhere";
    }
    row = (await updateDisputeStep(deps.sql, row.id, "closing", { release_transaction_id: txn })) ?? { ...row, release_transaction_id: txn };
  }
  if (row.outcome === "lost") {
    row = await takeBack(deps, row);
    if (row.fee > 0 && row.fee_transaction_id === null) {
      const txn = await post(deps, {
        org_id: row.org_id,
        livemode: row.livemode,
        kind: "dispute_fee",
        reference_id: `dispute_fee:${row.id}`,
        description: `Processor fee of dispute ${row.processor_dispute_id}`,
        postings: [{ debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: row.fee }],
        metadata: { dispute_id: row.id },
      });
      row = (await updateDisputeStep(deps.sql, row.id, "closing", { fee_transaction_id: txn })) ?? { ...row, fee_transaction_id: txn };
    }
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
  const known = await findDisputeByProcessorId(deps.sql, pd.id);
  if (known !== undefined) return known.livemode === livemode ? known : otherEnvironment(deps, pd, known.checkout_session_id, known.livemode, livemode);
  const sale = await findCheckoutByPayment(deps.sql, pd.paymentIntent, pd.charge);
  if (sale === undefined || sale.status !== "completed" || sale.ledger_reference === null) return `dispute ${pd.id} is not of one of our sales`;
  if (sale.livemode !== livemode) return otherEnvironment(deps, pd, sale.id, sale.livemode, livemode);
  // The creator's part of the disputed amount, pro rata to the sale's split after its fee: as a refund of it would take.
  const disputed = disputeParts({ gross: sale.amount, creatorAmount: checkoutSplit(sale).creatorAmount }, pd.amount);
  const creatorShare = disputed.fromCreator;
  const available = creatorShare > 0 ? await creatorAvailable(deps, { orgId: sale.org_id, livemode: sale.livemode }, sale.participant_id) : 0;
  return insertOrFindDispute(deps.sql, {
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
      (await markClosing(deps.sql, row.id, { outcome, refund_amount: outcome === "lost" ? row.amount : 0, fee: outcome === "lost" ? pd.fee : 0 })) ??
      (await findDispute(deps.sql, row.id)) ??
      row;
  }
  const done = await driveDispute(deps, row);
  return `dispute ${done.id} ${done.status}`;
}
