/**
 * `internal.processorRefundSettled`: payments reports that the card processor settled a live card refund
 * (succeeded or failed). The refund is driven on from there (usecases/execute-refund.ts): completed with its
 * events, or reversed in the ledger and failed. Idempotent: a refund already settled answers as it stands, so
 * payments may report the same outcome any number of times.
 *
 * Errors: refund_not_found, service_timeout (the ledger did not answer: payments reports again later).
 */
import { DomainError, tenantOf, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import type { RefundRow } from "../domain/records.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";

type Settled = z.output<typeof schemas.ProcessorRefundSettled>;

/** The refund as it stands once the report is applied. */
export async function processorRefundSettled(deps: RefundsDeps, req: Settled): Promise<RefundRow> {
  const tenant = tenantOf(req);
  const row = await deps.store.findRefund(tenant, req.refund_id);
  if (row === undefined) throw new DomainError("refund_not_found", `Refund ${req.refund_id} not found`);
  if (row.status !== "pending") return row;
  const updated =
    (await deps.store.recordProcessorStatus(row.id, {
      status: req.status,
      processor_refund_id: req.processor_refund_id,
      failure_reason: req.failure_reason,
    })) ??
    (await deps.store.findRefund(tenant, row.id)) ??
    row;
  try {
    return await executeRefund(deps, updated);
  } catch (e) {
    // A failed refund is the expected answer to a failure report: it has been reversed and marked.
    if (!(e instanceof DomainError) || e.code === "service_timeout") throw e;
    const now = await deps.store.findRefund(tenant, row.id);
    if (now === undefined || now.status === "pending") throw e;
    return now;
  }
}
