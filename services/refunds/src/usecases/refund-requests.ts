/**
 * A buyer's request names a sale of this org and environment that can still be refunded by the amount asked:
 * refused at once otherwise, so a request is never recorded for a sale that does not exist. The remainder may
 * still change before approval, which then answers the ledger's own refusal.
 */
async function checkSale(deps: RefundsDeps, scope: Scope, body: CreateBody): Promise<void> {
  const sale = await deps.ledger.saleSummary(scope, body.sale_reference);
  if (sale.reversed) throw new DomainError("sale_already_reversed", `Sale ${sale.sale_reference} was reversed and cannot be refunded`);
  if (sale.remaining_amount <= 0)
    throw new DomainError("sale_already_fully_refunded", `Sale ${sale.sale_reference} was already fully refunded`, { extra: { remaining_amount: 0 } });
  if (body.amount !== undefined && body.amount > sale.remaining_amount) {
    throw new DomainError("refund_amount_exceeds_remaining", `The refund exceeds the ${sale.remaining_amount} that remains refundable`, {
      extra: { remaining_amount: sale.remaining_amount },
    });
  }
}

/**
 * Buyer refund requests: created by the platform (or the buyer on the hosted wallet page), then approved,
 * rejected or cancelled (domain/refund-request.ts). Approval records the request's refund intent in the same
 * transaction that moves the request to `processing`, then executes it through the same path as POST
 * /v1/refunds (usecases/execute-refund.ts) with the ledger reference `refund_request:<id>`; settling the
 * refund completes the request. Every move locks the request row, so of a concurrent approve and cancel exactly
 * one wins, and a concurrent double approve records one refund.
 *
 * Errors: validation_error, idempotency_conflict (create), refund_request_not_found, invalid_state_transition
 * (with the current state and the request), and on approval the refund's errors (execute-refund.ts).
 */
import { DomainError, newId, type schemas } from "@treasury/contracts";
import { withTx, writeOutbox } from "@treasury/service-kit";
import type { z } from "zod";
import { requestHash } from "@treasury/service-kit";
import { ledgerReferenceOf, refundRequestKey } from "../domain/refund.ts";
import { canMove, isApprovalReplay, targetOf, type ReviewAction } from "../domain/refund-request.ts";
import type { Scope, Tx } from "../store/db.ts";
import {
  findRefundRequest,
  findRefundRequestByKey,
  insertRefundRequest,
  listRefundRequests,
  moveRefundRequest,
  type RefundRequestRow,
  type RequestFields,
} from "../store/refund-requests.ts";
import { findRefund, insertRefund, type RefundRow } from "../store/refunds.ts";
import { PAGE_LIMIT_DEFAULT, type RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";
import { presentRefund, presentRefundRequest } from "./present.ts";

type CreateBody = z.output<typeof schemas.CreateRefundRequestBody>;
type ActionBody = z.output<typeof schemas.RefundRequestActionBody>;
type ListQuery = z.output<typeof schemas.ListRefundRequestsQuery>;
type Answer = { status?: number; body: Record<string, unknown> };

const REQUEST_ID_RE = /^rr_[a-z0-9]{1,64}$/;

function notFound(id: string): DomainError {
  return new DomainError("refund_request_not_found", `Refund request ${id} not found`, { hint: "GET /v1/refund-requests lists refund requests" });
}

async function withRefund(deps: RefundsDeps, row: RefundRequestRow): Promise<Record<string, unknown>> {
  const refund = row.refund_id === null ? undefined : await findRefund(deps.sql, { orgId: row.org_id, livemode: row.livemode }, row.refund_id);
  return { refund_request: presentRefundRequest(row), refund: refund === undefined ? null : presentRefund(refund) };
}

export async function createRefundRequest(deps: RefundsDeps, scope: Scope, body: CreateBody): Promise<Answer> {
  const { idempotency_key: key, ...rest } = body;
  const hash = requestHash({ ...rest, refund_from: rest.refund_from ?? "both" });
  const replay = async (row: RefundRequestRow): Promise<Answer> => {
    if (row.request_hash !== hash)
      throw new DomainError("idempotency_conflict", `idempotency_key ${key ?? ""} was used with a different refund request`, {
        extra: { refund_request: presentRefundRequest(row) },
      });
    return { status: 200, body: { ...(await withRefund(deps, row)), idempotent: true } };
  };
  if (key !== undefined) {
    const existing = await findRefundRequestByKey(deps.sql, scope, key);
    if (existing !== undefined) return replay(existing);
  }
  await checkSale(deps, scope, body);
  const created = await withTx(deps.sql, async (tx) => {
    const row = await insertRefundRequest(tx, scope, {
      id: newId("rr"),
      sale_reference: body.sale_reference,
      customer_id: body.customer_id ?? null,
      customer_email: body.customer_email ?? null,
      amount: body.amount ?? null,
      reason: body.reason ?? null,
      refund_from: body.refund_from ?? "both",
      metadata: body.metadata ?? {},
      idempotency_key: key ?? null,
      request_hash: hash,
      created_at: deps.now(),
    });
    if (row !== undefined)
      await writeOutbox(tx, "refunds", { org_id: row.org_id, livemode: row.livemode, type: "refund_request.created", data: presentRefundRequest(row) });
    return row;
  });
  if (created !== undefined) return { status: 201, body: { refund_request: presentRefundRequest(created), refund: null } };
  const raced = key === undefined ? undefined : await findRefundRequestByKey(deps.sql, scope, key);
  if (raced === undefined) throw new Error("refund request neither inserted nor found");
  return replay(raced);
}

export async function getRefundRequest(deps: RefundsDeps, scope: Scope, id: string): Promise<Answer> {
  const row = REQUEST_ID_RE.test(id) ? await findRefundRequest(deps.sql, scope, id) : undefined;
  if (row === undefined) throw notFound(id);
  return { body: await withRefund(deps, row) };
}

export async function listRefundRequestsOf(deps: RefundsDeps, scope: Scope, query: ListQuery): Promise<Answer> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await listRefundRequests(deps.sql, scope, { status: query.status, saleReference: query.sale_reference, limit, offset });
  return { body: { refund_requests: rows.map(presentRefundRequest), total, count: rows.length, limit, offset } };
}

function illegal(row: RefundRequestRow, action: ReviewAction): DomainError {
  return new DomainError(
    "invalid_state_transition",
    `Refund request ${row.id} is ${row.status}; only a created request can be ${action === "approve" ? "approved" : action === "reject" ? "rejected" : "cancelled"}`,
    {
      hint: `GET /v1/refund-requests/${row.id} shows its state`,
      extra: { state: row.status, refund_request: presentRefundRequest(row) },
    },
  );
}

/** The fields a review move sets, by action. */
function reviewFields(action: ReviewAction, body: ActionBody, at: Date): RequestFields {
  const review: RequestFields = { status: targetOf(action), reviewed_by_actor: body.reviewed_by_actor ?? null, review_metadata: body.metadata ?? {} };
  if (action === "reject") return { ...review, rejection_reason: body.reason ?? null, reviewed_at: at };
  if (action === "cancel") return { ...review, cancellation_reason: body.reason ?? null, cancelled_at: at };
  return { ...review, reviewed_at: at };
}

/** reject | cancel: created → rejected | cancelled plus its event, under the request's row lock. */
export async function decideRefundRequest(deps: RefundsDeps, scope: Scope, id: string, action: "reject" | "cancel", body: ActionBody): Promise<Answer> {
  if (!REQUEST_ID_RE.test(id)) throw notFound(id);
  const moved = await withTx(deps.sql, async (tx) => {
    const row = await findRefundRequest(tx, scope, id, true);
    if (row === undefined) throw notFound(id);
    if (!canMove(row.status)) throw illegal(row, action);
    const at = deps.now();
    const next = await moveRefundRequest(tx, id, "created", reviewFields(action, body, at), at);
    if (next === undefined) throw new Error(`refund request ${id} did not move under its lock`);
    await writeOutbox(tx, "refunds", {
      org_id: next.org_id,
      livemode: next.livemode,
      type: action === "reject" ? "refund_request.rejected" : "refund_request.cancelled",
      data: presentRefundRequest(next),
    });
    return next;
  });
  return { body: { refund_request: presentRefundRequest(moved), refund: null } };
}

/** Step 1 of an approval, in the transaction that moves the request: its refund intent. */
async function recordApproval(deps: RefundsDeps, tx: Tx, scope: Scope, row: RefundRequestRow, body: ActionBody): Promise<RefundRow> {
  const at = deps.now();
  const refundId = newId("re");
  const refund = await insertRefund(tx, scope, {
    id: refundId,
    request_key: refundRequestKey(row.id),
    request_hash: requestHash({ refund_request_id: row.id }),
    idempotency_key: null,
    external_refund_id: null,
    refund_request_id: row.id,
    sale_reference: row.sale_reference,
    amount_requested: row.amount,
    refund_from: row.refund_from,
    reason: (row.reason ?? body.reason ?? `Refund request ${row.id} approved`).slice(0, 1000),
    metadata: { ...row.metadata, refund_request_id: row.id },
    ledger_reference: ledgerReferenceOf(refundId, row.id),
    created_at: at,
  });
  if (refund === undefined) throw new Error(`refund request ${row.id} already has a refund while created`);
  const moved = await moveRefundRequest(tx, row.id, "created", { ...reviewFields("approve", body, at), refund_id: refund.id }, at);
  if (moved === undefined) throw new Error(`refund request ${row.id} did not move under its lock`);
  return refund;
}

/**
 * approve: created → processing with its refund intent, then the refund executed (→ completed | failed). A
 * request already processing or completed answers the approval's outcome (driving a pending refund first).
 */
export async function approveRefundRequest(deps: RefundsDeps, scope: Scope, id: string, body: ActionBody): Promise<Answer> {
  if (!REQUEST_ID_RE.test(id)) throw notFound(id);
  const { refund, fresh } = await withTx(deps.sql, async (tx) => {
    const row = await findRefundRequest(tx, scope, id, true);
    if (row === undefined) throw notFound(id);
    if (isApprovalReplay(row.status, "approve")) {
      const existing = row.refund_id === null ? undefined : await findRefund(tx, scope, row.refund_id);
      if (existing === undefined) throw new Error(`refund request ${id} is ${row.status} without its refund`);
      return { refund: existing, fresh: false };
    }
    if (!canMove(row.status)) throw illegal(row, "approve");
    return { refund: await recordApproval(deps, tx, scope, row, body), fresh: true };
  });
  try {
    await executeRefund(deps, refund);
  } catch (e) {
    if (!(e instanceof DomainError) || e.code === "service_timeout") throw e;
    const after = await findRefundRequest(deps.sql, scope, id);
    throw new DomainError(e.code, e.message, {
      ...(e.hint !== undefined ? { hint: e.hint } : {}),
      extra: { ...e.extra, ...(after === undefined ? {} : { refund_request: presentRefundRequest(after) }) },
    });
  }
  const after = await findRefundRequest(deps.sql, scope, id);
  if (after === undefined) throw new Error(`refund request ${id} vanished`);
  return { body: { ...(await withRefund(deps, after)), ...(fresh ? {} : { idempotent: true }) } };
}
