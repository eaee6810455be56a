/**
 * `internal.processorRefundSettled`: payments reports that the card processor settled a live card refund
 * (succeeded or failed). The refund is driven on from there (usecases/execute-refund.ts): completed with its
 * events, or reversed in the ledger and failed. Idempotent: a refund already settled answers as it stands, so
 * payments may report the same outcome any number of times.
 *
 * Errors: refund_not_found, service_timeout (the ledger did not answer: payments reports again later).
 */
import { DomainError, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import { findRefund, recordProcessorStatus } from "../store/refunds.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";
import { presentRefund } from "./present.ts";

type Settled = z.output<typeof schemas.ProcessorRefundSettled>;

export async function processorRefundSettled(deps: RefundsDeps, req: Settled): Promise<{ refund: Record<string, unknown> }> {
  const scope = { orgId: req.org_id, livemode: req.livemode };
  const row = await findRefund(deps.sql, scope, req.refund_id);
  if (row === undefined) throw new DomainError("refund_not_found", `Refund ${req.refund_id} not found`);
  if (row.status !== "pending") return { refund: presentRefund(row) };
  const updated =
    (await recordProcessorStatus(deps.sql, row.id, { status: req.status, processor_refund_id: req.processor_refund_id, failure_reason: req.failure_reason })) ??
    (await findRefund(deps.sql, scope, row.id)) ??
    row;
  try {
    return { refund: presentRefund(await executeRefund(deps, updated)) };
  } catch (e) {
    // A failed refund is the expected answer to a failure report: it has been reversed and marked.
    if (!(e instanceof DomainError) || e.code === "service_timeout") throw e;
    const now = await findRefund(deps.sql, scope, row.id);
    if (now === undefined || now.status === "pending") throw e;
    return { refund: presentRefund(now) };
  }
}
