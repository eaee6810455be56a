/**
 * Steps 2 and 3 of a refund, per docs/architecture.md, "Money across services" (step 1, the intent, is
 * recorded by the caller: POST /v1/refunds, or the approval of a refund request):
 *   2. one svc.ledger.post with kind `refund` and the intent's ledger reference; the ledger owns the arithmetic
 *      (remainder by side, hold first, then balance, shortfall to creator_receivable or refused) and a repeat
 *      returns the first result, so any number of drivers move money once;
 *   3. one refunds statement marks the refund completed, writes `refund.created` and `sale.refunded`, and, for
 *      an approved refund request, completes the request and writes `refund_request.completed`.
 * A definitive ledger refusal marks the refund failed (and its request failed, with `refund_request.failed`).
 * A timeout leaves it pending for the next driver: outcome unknown, never failed.
 *
 * A live refund of a sale the buyer paid by card through the processor has a step between 2 and 3: payments asks
 * the processor to refund the payment (idempotent on the refund's id). The refund stays `pending` until the
 * processor settles it (synchronously, or later through its events, usecases/processor-refund-settled.ts): on
 * success step 3 runs; on failure the ledger's refund is reversed (reverse-transaction with key
 * `refund_reversal:<refund id>`: the creator and platform get back what it took) and the refund (and its request)
 * is marked failed with `processor_refund_failed`. Sandbox refunds never reach the processor.
 *
 * Errors: the ledger's refusals (original_sale_not_found, sale_already_reversed, sale_already_fully_refunded,
 * refund_amount_exceeds_remaining, insufficient_balance, wallet_not_active…), service_timeout.
 */
import { DomainError, type PostRequestInput } from "@treasury/contracts";
import { LedgerOutcomeUnknown, outboxRowValues, postAndSettle, type OutboxRowValues } from "@treasury/service-kit";
import { presentRefund, presentRefundRequest, saleRefundedData } from "../domain/present.ts";
import type { RefundOutcome, RefundRow } from "../domain/records.ts";
import { DEFINITIVE_REFUSALS } from "../domain/refund.ts";
import type { RefundsDeps } from "./deps.ts";
import { PaymentsOutcomeUnknown, type RefundPosted } from "./ports.ts";

export const REFUND_KIND = "refund";

/** The ledger request of a refund: built only from the stored row, so every driver sends the same one. */
export function refundPostRequest(row: RefundRow): PostRequestInput {
  return {
    org_id: row.org_id,
    livemode: row.livemode,
    kind: REFUND_KIND,
    reference_id: row.ledger_reference,
    description: `Refund ${row.id} of sale ${row.sale_reference}`.slice(0, 1000),
    metadata: { refund_id: row.id, refund_request_id: row.refund_request_id, external_refund_id: row.external_refund_id },
    refund: {
      sale_reference: row.sale_reference,
      ...(row.amount_requested !== null ? { amount: row.amount_requested } : {}),
      refund_from: row.refund_from,
      shortfall: row.shortfall,
      reason: row.reason,
    },
  };
}

/** What a failed refund answers: the ledger's code and message, with the refund (and its request) attached. */
export function failureError(row: RefundRow, extra: Record<string, unknown> = {}, hint?: string): DomainError {
  const code = row.failure_code ?? "internal_error";
  return new DomainError(code as DomainError["code"], row.failure_reason ?? "The refund failed", {
    hint: hint ?? `GET /v1/refunds/${row.id} shows the failed refund; another attempt needs a new idempotency_key`,
    extra: { ...extra, refund: presentRefund(row) },
  });
}

function outcomeOf(posted: RefundPosted, at: Date): RefundOutcome {
  const r = posted.extra.refund;
  return {
    transaction_id: posted.transaction_id,
    sale_transaction_id: r.sale_transaction_id,
    participant_id: r.participant_id,
    refunded_amount: r.amount,
    from_creator: r.from_creator,
    from_platform: r.from_platform,
    sales_tax: r.sales_tax,
    hold_amount_used: posted.extra.hold_amount_used,
    creator_receivable_amount: posted.extra.creator_receivable_amount,
    remaining_amount: r.remaining_amount,
    sale_gross: r.sale_gross,
    is_full_refund: r.is_full_refund,
    completed_at: at,
  };
}

/**
 * The events of a completed refund, built from the pending row and what settling sets (nothing else changes a
 * pending refund, nor a processing request): refund.created, sale.refunded, and refund_request.completed.
 */
async function completionEvents(deps: RefundsDeps, completed: RefundRow): Promise<OutboxRowValues[]> {
  const base = { org_id: completed.org_id, livemode: completed.livemode };
  const events = [
    outboxRowValues({ ...base, type: "refund.created", data: presentRefund(completed) }),
    outboxRowValues({ ...base, type: "sale.refunded", data: saleRefundedData(completed) }),
  ];
  if (completed.refund_request_id === null) return events;
  const request = await deps.store.findRefundRequest({ orgId: completed.org_id, livemode: completed.livemode }, completed.refund_request_id);
  if (request === undefined) throw new Error(`refund ${completed.id} names a missing refund request`);
  const done = {
    ...request,
    status: "completed" as const,
    refund_transaction_id: completed.transaction_id,
    completed_at: completed.completed_at,
    updated_at: completed.updated_at,
  };
  events.push(outboxRowValues({ ...base, type: "refund_request.completed", data: { ...presentRefundRequest(done), refund: presentRefund(completed) } }));
  return events;
}

async function settle(deps: RefundsDeps, row: RefundRow, posted: RefundPosted): Promise<RefundRow> {
  const outcome = outcomeOf(posted, deps.now());
  const completed: RefundRow = { ...row, ...outcome, status: "completed", updated_at: outcome.completed_at };
  const requestId = row.refund_request_id;
  const done = await deps.store.settleCompleted({ id: row.id, outcome, events: await completionEvents(deps, completed), requestId });
  if (done === undefined) return current(deps, row);
  // A refund request is processing exactly while its refund is pending (both move in one statement): a bug otherwise.
  if (requestId !== null && !done.requestMoved) throw new Error(`refund request ${requestId} was not processing while its refund ${row.id} completed`);
  return done.row;
}

async function fail(deps: RefundsDeps, row: RefundRow, e: DomainError): Promise<RefundRow> {
  const at = deps.now();
  const failed = await deps.store.transaction(async (tx) => {
    const moved = await tx.markFailed(row.id, e.code, e.message, at);
    if (moved === undefined || moved.refund_request_id === null) return moved;
    const request = await tx.moveRefundRequest(moved.refund_request_id, "processing", { status: "failed", failure_reason: `${e.code}: ${e.message}` }, at);
    if (request === undefined) throw new Error(`refund request ${moved.refund_request_id} was not processing while its refund ${moved.id} failed`);
    await tx.emit({
      org_id: request.org_id,
      livemode: request.livemode,
      type: "refund_request.failed",
      data: { ...presentRefundRequest(request), failure_code: e.code, refund: presentRefund(moved) },
    });
    return moved;
  });
  return failed ?? (await current(deps, row));
}

async function current(deps: RefundsDeps, row: RefundRow): Promise<RefundRow> {
  const now = await deps.store.findRefund({ orgId: row.org_id, livemode: row.livemode }, row.id);
  if (now === undefined) throw new Error(`refund ${row.id} vanished`);
  return now;
}

/**
 * Drives a pending refund to its outcome and answers the settled row; a failed refund answers its failure
 * (thrown). Used by POST /v1/refunds, by approvals and by the reconciler.
 */
export async function executeRefund(deps: RefundsDeps, row: RefundRow): Promise<RefundRow> {
  if (row.status === "completed") return row;
  if (row.status === "failed") throw failureError(row);
  return postAndSettle<RefundPosted, RefundRow>({
    beforePost: deps.afterIntent,
    post: () => deps.ledger.postRefund(refundPostRequest(row)),
    isDefinitive: (e) => DEFINITIVE_REFUSALS.has(e.code),
    refused: async (e) => {
      const failed = await fail(deps, row, e);
      if (failed.status === "completed") return failed;
      throw failureError(failed, e.extra, e.hint);
    },
    pendingMessage: "The ledger did not answer in time; the refund completes shortly, retry with the same request to read it",
    afterPost: deps.afterLedgerPost,
    settle: (posted) => settleOrHold(deps, row, posted),
  });
}

/** Step 3, except for a live card refund the processor has not refunded yet (pending) or failed (reversed). */
async function settleOrHold(deps: RefundsDeps, row: RefundRow, posted: RefundPosted): Promise<RefundRow> {
  if (row.livemode) {
    const held = await cardRefund(deps, row, posted);
    if (held?.status === "failed") throw failureError(held);
    if (held !== undefined) return held;
  }
  return settle(deps, row, posted);
}

/**
 * The processor's part of a live refund. Undefined when the refund may settle now (no card payment, or the
 * processor refunded it); else the refund as it stands (pending at the processor, or failed and reversed).
 */
async function cardRefund(deps: RefundsDeps, row: RefundRow, posted: RefundPosted): Promise<RefundRow | undefined> {
  let current = row;
  if (current.processor_status === null || current.processor_status === "pending") {
    let answer;
    try {
      answer = await deps.payments.processorRefund(
        { orgId: row.org_id, livemode: row.livemode },
        { refund_id: row.id, sale_reference: row.sale_reference, amount: posted.extra.refund.amount },
      );
    } catch (e) {
      if (!(e instanceof PaymentsOutcomeUnknown)) throw e;
      // The ledger has the refund; the processor has not been reached: pending, and asked again by the reconciler.
      deps.log.warn({ refund_id: row.id, code: e.code }, "the card refund could not be asked of the processor yet");
      return current;
    }
    const state =
      answer === null
        ? { status: "none" as const, processor_refund_id: null, failure_reason: null }
        : { status: answer.status, processor_refund_id: answer.processor_refund_id, failure_reason: answer.failure_reason };
    current = (await deps.store.recordProcessorStatus(row.id, state)) ?? {
      ...current,
      processor_status: state.status,
      processor_failure_reason: state.failure_reason,
    };
  }
  if (current.processor_status === "pending") return current;
  if (current.processor_status !== "failed") return undefined;
  return reverseFailedCardRefund(deps, current, posted);
}

/** The processor failed the refund: the ledger gives back what the refund took, then the refund fails. */
async function reverseFailedCardRefund(deps: RefundsDeps, row: RefundRow, posted: RefundPosted): Promise<RefundRow> {
  let reversal: string;
  try {
    reversal = await deps.ledger.reverseTransaction(
      { orgId: row.org_id, livemode: row.livemode },
      {
        transaction_id: posted.transaction_id,
        idempotency_key: `refund_reversal:${row.id}`,
        reason: `Card refund failed at the processor: ${row.processor_failure_reason ?? "no reason given"}`.slice(0, 1000),
      },
    );
  } catch (e) {
    if (e instanceof LedgerOutcomeUnknown)
      throw new DomainError("service_timeout", "The ledger did not answer in time; the failed card refund is reversed shortly");
    throw e;
  }
  await deps.store.recordReversal(row.id, reversal);
  const failed = await fail(
    deps,
    row,
    new DomainError(
      "processor_refund_failed",
      `The card processor failed the refund${row.processor_failure_reason !== null ? `: ${row.processor_failure_reason}` : ""}`,
    ),
  );
  return failed;
}
