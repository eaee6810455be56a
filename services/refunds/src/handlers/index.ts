/** RPC handlers of refunds: decode with the shared contracts → use case → named-key body; the handler picks the status. */
import { DomainError, parseOrThrow, schemas, tenantOf, type RpcRequest } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import { presentRefund, presentRefundRequest } from "../domain/present.ts";
import { createRefund } from "../usecases/create-refund.ts";
import type { RefundsDeps } from "../usecases/deps.ts";
import { processorRefundSettled } from "../usecases/processor-refund-settled.ts";
import { getRefund, listRefundsOf } from "../usecases/read-refunds.ts";
import {
  approveRefundRequest,
  createRefundRequest,
  decideRefundRequest,
  getRefundRequest,
  listRefundRequestsOf,
  type RequestOutcome,
  type RequestWithRefund,
} from "../usecases/refund-requests.ts";

function param(req: RpcRequest, name: string): string {
  const v = req.params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}

/** `{refund_request, refund}`: the refund is null until the request is approved. */
function requestBody({ request, refund }: RequestWithRefund): Record<string, unknown> {
  return { refund_request: presentRefundRequest(request), refund: refund === undefined ? null : presentRefund(refund) };
}

/** A replayed create or approval says so with `idempotent: true`. */
function outcomeBody(outcome: RequestOutcome): Record<string, unknown> {
  return { ...requestBody(outcome), ...(outcome.replayed ? { idempotent: true } : {}) };
}

function refundHandlers(deps: RefundsDeps): Record<string, RpcHandler> {
  return {
    createRefund: async (req, ctx) => {
      const { refund, replayed } = await createRefund(deps, tenantOf(ctx.auth), parseOrThrow(schemas.CreateRefundBody, req.body));
      return replayed ? { status: 200, body: { refund: presentRefund(refund), idempotent: true } } : { status: 201, body: { refund: presentRefund(refund) } };
    },
    listRefunds: async (req, ctx) => {
      const list = await listRefundsOf(deps, tenantOf(ctx.auth), parseOrThrow(schemas.ListRefundsQuery, req.query));
      return { body: { refunds: list.refunds.map(presentRefund), total: list.total, count: list.refunds.length, limit: list.limit, offset: list.offset } };
    },
    getRefund: async (req, ctx) => ({ body: { refund: presentRefund(await getRefund(deps, tenantOf(ctx.auth), param(req, "refund_id"))) } }),
  };
}

function refundRequestHandlers(deps: RefundsDeps): Record<string, RpcHandler> {
  const action = (req: RpcRequest) => parseOrThrow(schemas.RefundRequestActionBody, req.body ?? {});
  const decide = (kind: "reject" | "cancel"): RpcHandler => {
    return async (req, ctx) => {
      const moved = await decideRefundRequest(deps, tenantOf(ctx.auth), param(req, "refund_request_id"), kind, action(req));
      return { body: { refund_request: presentRefundRequest(moved), refund: null } };
    };
  };
  return {
    createRefundRequest: async (req, ctx) => {
      const outcome = await createRefundRequest(deps, tenantOf(ctx.auth), parseOrThrow(schemas.CreateRefundRequestBody, req.body));
      return { status: outcome.replayed ? 200 : 201, body: outcomeBody(outcome) };
    },
    listRefundRequests: async (req, ctx) => {
      const list = await listRefundRequestsOf(deps, tenantOf(ctx.auth), parseOrThrow(schemas.ListRefundRequestsQuery, req.query));
      const { requests, total, limit, offset } = list;
      return { body: { refund_requests: requests.map(presentRefundRequest), total, count: requests.length, limit, offset } };
    },
    getRefundRequest: async (req, ctx) => ({ body: requestBody(await getRefundRequest(deps, tenantOf(ctx.auth), param(req, "refund_request_id"))) }),
    approveRefundRequest: async (req, ctx) => ({
      body: outcomeBody(await approveRefundRequest(deps, tenantOf(ctx.auth), param(req, "refund_request_id"), action(req))),
    }),
    rejectRefundRequest: decide("reject"),
    cancelRefundRequest: decide("cancel"),
  };
}

export function registerHandlers(svc: Pick<Service, "handle">, deps: RefundsDeps): void {
  const ops = { ...refundHandlers(deps), ...refundRequestHandlers(deps) };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
}

/** Internal operations other services call over NATS (never routed by the gateway): payments reports card refunds. */
export function registerInternal(svc: Pick<Service, "handleInternal">, deps: RefundsDeps): void {
  svc.handleInternal(
    schemas.PROCESSOR_REFUND_SETTLED_OPERATION,
    (payload) => parseOrThrow(schemas.ProcessorRefundSettled, payload),
    async (settled) => ({ refund: presentRefund(await processorRefundSettled(deps, settled)) }),
  );
}
