/**
 * Card refunds at the processor. The refunds service records a refund and has the ledger take it back first; for
 * a live sale the buyer paid by card through the processor it then asks payments (`internal.processorRefund`) to
 * refund the payment: payments records the request, calls the processor's refund API with the refund's id as the
 * idempotency key (so any number of asks make one processor refund) and answers its state. The processor's later
 * events (`refund.updated`, `charge.refunded`, …) settle it; payments then tells the refunds service
 * (`internal.processorRefundSettled`), which completes the refund or, when the processor failed it, reverses it in
 * the ledger. Sandbox refunds never come here.
 *
 * Errors (startProcessorRefund): validation_error, provider_not_configured (no processor credentials),
 * service_unavailable (the processor did not answer: ask again, the same refund is found).
 */
import { DomainError, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import { isUuid } from "../domain/ids.ts";
import type { ProcessorRefundRow } from "../domain/records.ts";
import type { PaymentsDeps } from "./deps.ts";
import { dropReport } from "./drop-report.ts";
import { ProcessorRefused, ProcessorUnavailable, type ProcessorRefund } from "./ports.ts";

type StartRequest = z.output<typeof schemas.ProcessorRefundRequest>;

const CHECKOUT_SALE_RE = /^checkout:([0-9a-f-]{36})$/i;

function stateOf(row: ProcessorRefundRow): schemas.ProcessorRefundState {
  const status = row.status === "requested" ? "pending" : row.status;
  return { processor: "stripe", processor_refund_id: row.processor_refund_id, status, failure_reason: row.failure_reason };
}

/** The live card payment behind a sale reference, or undefined when the sale was not paid through the processor. */
async function cardPaymentOf(deps: PaymentsDeps, req: StartRequest): Promise<{ checkoutId: string; paymentIntent: string } | undefined> {
  const m = CHECKOUT_SALE_RE.exec(req.sale_reference);
  const id = m?.[1]?.toLowerCase();
  if (id === undefined || !isUuid(id) || !req.livemode) return undefined;
  const row = await deps.checkouts.find({ orgId: req.org_id, livemode: req.livemode }, id);
  if (row === undefined || row.status !== "completed" || row.processor_payment_intent === null) return undefined;
  return { checkoutId: row.id, paymentIntent: row.processor_payment_intent };
}

/** Asks the processor to refund (again, idempotently) and records its answer. */
async function askProcessor(deps: PaymentsDeps, row: ProcessorRefundRow): Promise<ProcessorRefundRow> {
  if (deps.processor === undefined) {
    throw new DomainError("provider_not_configured", "Live card refunds need the card processor's credentials", {
      hint: "Configure STRIPE_SECRET_KEY on the payments service",
    });
  }
  let state: { processor_refund_id: string; status: "pending" | "succeeded" | "failed"; failure_reason: string | null };
  try {
    const r = await deps.processor.createRefund({
      paymentIntentId: row.processor_payment_intent,
      amount: row.amount,
      refundId: row.refund_id,
      metadata: { refund_id: row.refund_id, org_id: row.org_id, livemode: String(row.livemode), sale_reference: row.sale_reference },
    });
    state = { processor_refund_id: r.id, status: r.status, failure_reason: r.failureReason };
  } catch (e) {
    if (e instanceof ProcessorRefused) {
      // Refused outright (already refunded, amount above what is left…): no processor refund exists.
      deps.log.warn({ refund_id: row.refund_id, processor_code: e.processorCode }, "the processor refused a card refund");
      state = { processor_refund_id: `refused:${row.refund_id}`, status: "failed", failure_reason: e.message };
    } else if (e instanceof ProcessorUnavailable) {
      deps.log.warn({ refund_id: row.refund_id, reason: e.message }, "the processor did not answer a card refund; it is asked again");
      throw new DomainError("service_unavailable", "The card processor did not answer; the refund stays pending and is asked again");
    } else {
      throw e;
    }
  }
  return (
    (await deps.processorRefunds.recordState(row, state)) ??
    (await deps.processorRefunds.find({ orgId: row.org_id, livemode: row.livemode }, row.refund_id)) ??
    row
  );
}

export async function startProcessorRefund(deps: PaymentsDeps, req: StartRequest): Promise<{ processor_refund: schemas.ProcessorRefundState | null }> {
  const tenant = { orgId: req.org_id, livemode: req.livemode };
  let row = await deps.processorRefunds.find(tenant, req.refund_id);
  if (row === undefined) {
    const payment = await cardPaymentOf(deps, req);
    if (payment === undefined) return { processor_refund: null };
    row = await deps.processorRefunds.insertOrFind({
      org_id: req.org_id,
      livemode: req.livemode,
      refund_id: req.refund_id,
      checkout_session_id: payment.checkoutId,
      sale_reference: req.sale_reference,
      amount: req.amount,
      processor_payment_intent: payment.paymentIntent,
    });
  }
  if (row.status === "requested") row = await askProcessor(deps, row);
  return { processor_refund: stateOf(row) };
}

/**
 * Applies what the processor reports of one refund and tells the refunds service once it is settled. `livemode`:
 * the environment of the report (its event's); a report of the other environment is dropped. Answers what
 * happened; throws (and the event is retried) while the refunds service cannot be told.
 */
export async function applyProcessorRefund(deps: PaymentsDeps, refund: ProcessorRefund, livemode: boolean): Promise<string> {
  let row = await deps.processorRefunds.findByProcessorRefundId(refund.id);
  const metaId = refund.metadata["refund_id"];
  const metaOrg = refund.metadata["org_id"];
  if (row === undefined && metaId !== undefined && metaOrg !== undefined) {
    row = await deps.processorRefunds.find({ orgId: metaOrg, livemode: refund.metadata["livemode"] === "true" }, metaId);
  }
  if (row === undefined) return `refund ${refund.id} is not one of ours`;
  if (row.livemode !== livemode) {
    return dropReport(
      deps,
      "livemode_mismatch",
      { refund_id: row.refund_id, processor_refund_id: refund.id, report_livemode: livemode, stored_livemode: row.livemode },
      `processor refund ${refund.id} is not of refund ${row.refund_id}'s environment`,
    );
  }
  const updated = await deps.processorRefunds.recordState(row, {
    processor_refund_id: refund.id,
    status: refund.status,
    failure_reason: refund.failureReason,
  });
  if (updated !== undefined && row.status === "succeeded" && updated.status === "failed") {
    deps.log.error({ refund_id: row.refund_id, processor_refund_id: refund.id }, "the processor failed a card refund after it had succeeded");
  }
  const current = updated ?? row;
  if (current.status !== "succeeded" && current.status !== "failed") return `refund ${current.refund_id} is ${current.status} at the processor`;
  if (current.notified_status === current.status) return `refund ${current.refund_id} ${current.status} (already told)`;
  await deps.refunds.processorRefundSettled(
    { orgId: current.org_id, livemode: current.livemode },
    { refund_id: current.refund_id, processor_refund_id: refund.id, status: current.status, failure_reason: current.failure_reason },
  );
  await deps.processorRefunds.markNotified(current, current.status);
  return `refund ${current.refund_id} ${current.status}`;
}

/**
 * `charge.refunded` names the payment, not always its refunds: each refund of ours still pending on that payment
 * is read back from the processor and applied.
 */
export async function applyChargeRefunded(deps: PaymentsDeps, paymentIntent: string | null, listed: ProcessorRefund[], livemode: boolean): Promise<string> {
  const outcomes: string[] = [];
  for (const r of listed) outcomes.push(await applyProcessorRefund(deps, r, livemode));
  if (paymentIntent !== null) {
    const seen = new Set(listed.map((r) => r.id));
    for (const row of await deps.processorRefunds.unsettledOfPayment(paymentIntent)) {
      if (row.processor_refund_id === null || seen.has(row.processor_refund_id)) continue;
      if (deps.processor === undefined) throw new ProcessorUnavailable("no processor credentials to read a refund back");
      outcomes.push(await applyProcessorRefund(deps, await deps.processor.retrieveRefund(row.processor_refund_id), livemode));
    }
  }
  return outcomes.length === 0 ? "no refund of ours" : outcomes.join("; ");
}
