/**
 * Buyer refund requests: created by the platform (or the buyer on the hosted wallet page), then approved,
 * rejected or cancelled (domain/refund-request.ts). Approval records the request's refund intent in the same
 * transaction that moves the request to `processing`, then executes it through the same path as POST
 * /v1/refunds (usecases/execute-refund.ts) with the ledger reference `refund_request:<id>`; settling the
 * refund completes the request. Every move locks the request row, so of a concurrent approve and cancel exactly
 * one wins, and a concurrent double approve records one refund. A request whose expires_at passed on its org's
 * clock is expired by the move that finds it so (usecases/expire-requests.ts), which then answers the illegal move.
 *
 * Errors: validation_error, idempotency_conflict (create), refund_request_not_found, invalid_state_transition
 * (with the current state and the request), and on approval the refund's errors (execute-refund.ts).
 */
import { DomainError, newId, type schemas, type Tenant } from "@treasury/contracts";
import { requestHash } from "@treasury/service-kit";
import type { z } from "zod";
import { presentRefundRequest } from "../domain/present.ts";
import type { RefundRequestRow, RefundRow, RequestFields } from "../domain/records.ts";
import { canMove, expiresAtOf, isApprovalReplay, isDue, targetOf, type ReviewAction } from "../domain/refund-request.ts";
import { ledgerReferenceOf, refundRequestKey } from "../domain/refund.ts";
import { PAGE_LIMIT_DEFAULT, type RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";
import { expireLocked } from "./expire-requests.ts";
import type { RefundsTx } from "./ports.ts";

type CreateBody = z.output<typeof schemas.CreateRefundRequestBody>;
type ActionBody = z.output<typeof schemas.RefundRequestActionBody>;
type ListQuery = z.output<typeof schemas.ListRefundRequestsQuery>;

/** A refund request with its refund (none until approved). */
export interface RequestWithRefund {
  request: RefundRequestRow;
  refund: RefundRow | undefined;
}

/** What a create or an approval answers: the request, its refund, and whether it repeated an earlier one. */
export interface RequestOutcome extends RequestWithRefund {
  replayed: boolean;
}

export interface RefundRequestList {
  requests: RefundRequestRow[];
  total: number;
  limit: number;
  offset: number;
}

const REQUEST_ID_RE = /^rr_[a-z0-9]{1,64}$/;

function notFound(id: string): DomainError {
  return new DomainError("refund_request_not_found", `Refund request ${id} not found`, { hint: "GET /v1/refund-requests lists refund requests" });
}

async function withRefund(deps: RefundsDeps, request: RefundRequestRow): Promise<RequestWithRefund> {
  const refund = request.refund_id === null ? undefined : await deps.store.findRefund({ orgId: request.org_id, livemode: request.livemode }, request.refund_id);
  return { request, refund };
}

/**
 * A buyer's request names a sale of this org and environment that can still be refunded by the amount asked:
 * refused at once otherwise, so a request is never recorded for a sale that does not exist. The remainder may
 * still change before approval, which then answers the ledger's own refusal.
 */
async function checkSale(deps: RefundsDeps, tenant: Tenant, body: CreateBody): Promise<void> {
  const sale = await deps.ledger.saleSummary(tenant, body.sale_reference);
  if (sale.reversed) throw new DomainError("sale_already_reversed", `Sale ${sale.sale_reference} was reversed and cannot be refunded`);
  if (sale.remaining_amount <= 0)
    throw new DomainError("sale_already_fully_refunded", `Sale ${sale.sale_reference} was already fully refunded`, { extra: { remaining_amount: 0 } });
  if (body.amount !== undefined && body.amount > sale.remaining_amount) {
    throw new DomainError("refund_amount_exceeds_remaining", `The refund exceeds the ${sale.remaining_amount} that remains refundable`, {
      extra: { remaining_amount: sale.remaining_amount },
    });
  }
}

/** A `created` request and its event, in one transaction; undefined when its idempotency key is taken. */
async function insertCreated(deps: RefundsDeps, tenant: Tenant, body: CreateBody, hash: string): Promise<RefundRequestRow | undefined> {
  return deps.store.transaction(async (tx) => {
    const row = await tx.insertRefundRequest(tenant, {
      id: newId("rr"),
      sale_reference: body.sale_reference,
      customer_id: body.customer_id ?? null,
      customer_email: body.customer_email ?? null,
      amount: body.amount ?? null,
      reason: body.reason ?? null,
      refund_from: body.refund_from ?? "both",
      metadata: body.metadata ?? {},
      idempotency_key: body.idempotency_key ?? null,
      request_hash: hash,
      created_at: deps.now(),
      expires_at: expiresAtOf(deps.clock(tenant), deps.requestTtlDays),
    });
    if (row !== undefined) await tx.emit({ org_id: row.org_id, livemode: row.livemode, type: "refund_request.created", data: presentRefundRequest(row) });
    return row;
  });
}

export async function createRefundRequest(deps: RefundsDeps, tenant: Tenant, body: CreateBody): Promise<RequestOutcome> {
  const { idempotency_key: key, ...rest } = body;
  const hash = requestHash({ ...rest, refund_from: rest.refund_from ?? "both" });
  const replay = async (row: RefundRequestRow): Promise<RequestOutcome> => {
    if (row.request_hash !== hash)
      throw new DomainError("idempotency_conflict", `idempotency_key ${key ?? ""} was used with a different refund request`, {
        extra: { refund_request: presentRefundRequest(row) },
      });
    return { ...(await withRefund(deps, row)), replayed: true };
  };
  if (key !== undefined) {
    const existing = await deps.store.findRefundRequestByKey(tenant, key);
    if (existing !== undefined) return replay(existing);
  }
  await checkSale(deps, tenant, body);
  const created = await insertCreated(deps, tenant, body, hash);
  if (created !== undefined) return { request: created, refund: undefined, replayed: false };
  const raced = key === undefined ? undefined : await deps.store.findRefundRequestByKey(tenant, key);
  if (raced === undefined) throw new Error("refund request neither inserted nor found");
  return replay(raced);
}

export async function getRefundRequest(deps: RefundsDeps, tenant: Tenant, id: string): Promise<RequestWithRefund> {
  const row = REQUEST_ID_RE.test(id) ? await deps.store.findRefundRequest(tenant, id) : undefined;
  if (row === undefined) throw notFound(id);
  return withRefund(deps, row);
}

export async function listRefundRequestsOf(deps: RefundsDeps, tenant: Tenant, query: ListQuery): Promise<RefundRequestList> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await deps.store.listRefundRequests(tenant, { status: query.status, saleReference: query.sale_reference, limit, offset });
  return { requests: rows, total, limit, offset };
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
  if (action === "cancel") return { ...review, cancellation_reason: body.reason ?? null, cancelled_by: "api", cancelled_at: at };
  return { ...review, reviewed_at: at };
}

/** reject | cancel: created → rejected | cancelled plus its event, under the request's row lock. Answers the moved request. */
export async function decideRefundRequest(
  deps: RefundsDeps,
  tenant: Tenant,
  id: string,
  action: "reject" | "cancel",
  body: ActionBody,
): Promise<RefundRequestRow> {
  if (!REQUEST_ID_RE.test(id)) throw notFound(id);
  const decided = await deps.store.transaction(async (tx) => {
    const row = await tx.findRefundRequest(tenant, id, true);
    if (row === undefined) throw notFound(id);
    if (!canMove(row.status)) throw illegal(row, action);
    if (isDue(row, deps.clock(tenant))) return { expired: await expireLocked(deps, tx, tenant, row) };
    const at = deps.now();
    const next = await tx.moveRefundRequest(id, "created", reviewFields(action, body, at), at);
    if (next === undefined) throw new Error(`refund request ${id} did not move under its lock`);
    await tx.emit({
      org_id: next.org_id,
      livemode: next.livemode,
      type: action === "reject" ? "refund_request.rejected" : "refund_request.cancelled",
      data: presentRefundRequest(next),
    });
    return { moved: next };
  });
  // The expiry commits with its event; the move that found the request expired is then refused like any other.
  if ("expired" in decided) throw illegal(decided.expired, action);
  return decided.moved;
}

/** Step 1 of an approval, in the transaction that moves the request: its refund intent. */
async function recordApproval(deps: RefundsDeps, tx: RefundsTx, tenant: Tenant, row: RefundRequestRow, body: ActionBody): Promise<RefundRow> {
  const at = deps.now();
  const refundId = newId("re");
  const refund = await tx.insertRefund(tenant, {
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
  const moved = await tx.moveRefundRequest(row.id, "created", { ...reviewFields("approve", body, at), refund_id: refund.id }, at);
  if (moved === undefined) throw new Error(`refund request ${row.id} did not move under its lock`);
  return refund;
}

/**
 * The approval's refund: recorded now (created → processing), or the one an earlier approval recorded. A request
 * found past its expires_at is expired instead (committed), and the approval refused.
 */
async function approvalRefund(deps: RefundsDeps, tenant: Tenant, id: string, body: ActionBody): Promise<{ refund: RefundRow; fresh: boolean }> {
  const approval = await deps.store.transaction(async (tx) => {
    const row = await tx.findRefundRequest(tenant, id, true);
    if (row === undefined) throw notFound(id);
    if (isApprovalReplay(row.status, "approve")) {
      const existing = row.refund_id === null ? undefined : await tx.findRefund(tenant, row.refund_id);
      if (existing === undefined) throw new Error(`refund request ${id} is ${row.status} without its refund`);
      return { refund: existing, fresh: false };
    }
    if (!canMove(row.status)) throw illegal(row, "approve");
    if (isDue(row, deps.clock(tenant))) return { expired: await expireLocked(deps, tx, tenant, row) };
    return { refund: await recordApproval(deps, tx, tenant, row, body), fresh: true };
  });
  if ("expired" in approval) throw illegal(approval.expired, "approve");
  return approval;
}

/**
 * approve: created → processing with its refund intent, then the refund executed (→ completed | failed). A
 * request already processing or completed answers the approval's outcome (driving a pending refund first).
 */
export async function approveRefundRequest(deps: RefundsDeps, tenant: Tenant, id: string, body: ActionBody): Promise<RequestOutcome> {
  if (!REQUEST_ID_RE.test(id)) throw notFound(id);
  const { refund, fresh } = await approvalRefund(deps, tenant, id, body);
  try {
    await executeRefund(deps, refund);
  } catch (e) {
    if (!(e instanceof DomainError) || e.code === "service_timeout") throw e;
    const after = await deps.store.findRefundRequest(tenant, id);
    throw new DomainError(e.code, e.message, {
      ...(e.hint !== undefined ? { hint: e.hint } : {}),
      extra: { ...e.extra, ...(after === undefined ? {} : { refund_request: presentRefundRequest(after) }) },
    });
  }
  const after = await deps.store.findRefundRequest(tenant, id);
  if (after === undefined) throw new Error(`refund request ${id} vanished`);
  return { ...(await withRefund(deps, after)), replayed: !fresh };
}
