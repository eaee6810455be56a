/** RPC handlers of refunds: decode with the shared contracts → use case → named-key body. */
import { DomainError, parseOrThrow, schemas, type RpcRequest } from "@treasury/contracts";
import { domainErrorReply, type RpcHandler, type Service } from "@treasury/service-kit";
import { createRefund } from "../usecases/create-refund.ts";
import { scopeOfAuth, type RefundsDeps } from "../usecases/deps.ts";
import { processorRefundSettled } from "../usecases/processor-refund-settled.ts";
import { getRefund, listRefundsOf } from "../usecases/read-refunds.ts";
import { approveRefundRequest, createRefundRequest, decideRefundRequest, getRefundRequest, listRefundRequestsOf } from "../usecases/refund-requests.ts";

function param(req: RpcRequest, name: string): string {
  const v = req.params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}

export function registerHandlers(svc: Pick<Service, "handle">, deps: RefundsDeps): void {
  const ops: Record<string, RpcHandler> = {
    createRefund: (req, ctx) => createRefund(deps, scopeOfAuth(ctx.auth), parseOrThrow(schemas.CreateRefundBody, req.body)),
    listRefunds: (req, ctx) => listRefundsOf(deps, scopeOfAuth(ctx.auth), parseOrThrow(schemas.ListRefundsQuery, req.query)),
    getRefund: (req, ctx) => getRefund(deps, scopeOfAuth(ctx.auth), param(req, "refund_id")),
    createRefundRequest: (req, ctx) => createRefundRequest(deps, scopeOfAuth(ctx.auth), parseOrThrow(schemas.CreateRefundRequestBody, req.body)),
    listRefundRequests: (req, ctx) => listRefundRequestsOf(deps, scopeOfAuth(ctx.auth), parseOrThrow(schemas.ListRefundRequestsQuery, req.query)),
    getRefundRequest: (req, ctx) => getRefundRequest(deps, scopeOfAuth(ctx.auth), param(req, "refund_request_id")),
    approveRefundRequest: (req, ctx) =>
      approveRefundRequest(deps, scopeOfAuth(ctx.auth), param(req, "refund_request_id"), parseOrThrow(schemas.RefundRequestActionBody, req.body ?? {})),
    rejectRefundRequest: (req, ctx) =>
      decideRefundRequest(
        deps,
        scopeOfAuth(ctx.auth),
        param(req, "refund_request_id"),
        "reject",
        parseOrThrow(schemas.RefundRequestActionBody, req.body ?? {}),
      ),
    cancelRefundRequest: (req, ctx) =>
      decideRefundRequest(
        deps,
        scopeOfAuth(ctx.auth),
        param(req, "refund_request_id"),
        "cancel",
        parseOrThrow(schemas.RefundRequestActionBody, req.body ?? {}),
      ),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
}

/** Internal operations other services call over NATS (never routed by the gateway): payments reports card refunds. */
export function registerInternal(svc: Pick<Service, "rpc">, deps: RefundsDeps): void {
  svc.rpc.handleRaw(schemas.PROCESSOR_REFUND_SETTLED_OPERATION, async (payload) => {
    try {
      return { ok: true, status: 200, body: await processorRefundSettled(deps, parseOrThrow(schemas.ProcessorRefundSettled, payload)) };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  });
}
