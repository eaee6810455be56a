/**
 * RPC handlers of risk: decode with the shared contracts → use case → named-key body; the handler picks the status.
 * `svc.risk.internal.evaluate` is the money path's: its payload names the org and environment itself.
 */
import { DomainError, parseOrThrow, prefixedId, schemas, tenantOf } from "@treasury/contracts";
import { requestHash, type Service } from "@treasury/service-kit";
import { presentEvaluation } from "../domain/evaluations.ts";
import { presentPolicy } from "../domain/policies.ts";
import type { Proposal } from "../domain/rules.ts";
import { configureAlerts } from "../usecases/alerts.ts";
import { evaluateMovement, getEvaluation } from "../usecases/evaluate.ts";
import { createPolicy, deletePolicy, listPolicies } from "../usecases/policies.ts";
import type { RiskDeps } from "../usecases/ports.ts";

function pathId(params: Record<string, string>, name: string, prefix: string): string {
  const parsed = prefixedId(prefix).safeParse(params[name]);
  if (!parsed.success) {
    throw new DomainError("validation_error", `Invalid path parameter ${name}`, { details: [{ path: `params.${name}`, message: `must be a ${prefix}_ id` }] });
  }
  return parsed.data;
}

type Fields = Omit<schemas.CreateEvaluationBody, "idempotency_key" | "operation"> & { facts?: { bank_account_updated_at?: string | undefined } | undefined };

function proposalOf(operation: schemas.RiskOperation, b: Fields): Proposal {
  const at = b.facts?.bank_account_updated_at;
  return {
    operation,
    amount: b.amount,
    currency: (b.currency ?? "usd").toLowerCase(),
    participantId: b.participant_id,
    buyerId: b.buyer_id,
    ip: b.ip,
    category: b.category,
    authorizingInstrumentId: b.authorizing_instrument_id,
    expectedDate: b.expected_date,
    counterpartyName: b.counterparty_name,
    bankAccountUpdatedAt: at === undefined ? undefined : new Date(at),
  };
}

export function registerHandlers(svc: Pick<Service, "handle" | "handleInternal">, deps: RiskDeps): void {
  svc.handle("listFraudPolicies", async (req, ctx) => {
    const { policies, total } = await listPolicies(deps, tenantOf(ctx.auth), req.query);
    return { body: { policies: policies.map(presentPolicy), total } };
  });
  svc.handle("createFraudPolicy", async (req, ctx) => ({
    status: 201,
    body: { policy: presentPolicy(await createPolicy(deps, tenantOf(ctx.auth), req.body)) },
  }));
  svc.handle("deleteFraudPolicy", async (req, ctx) => {
    const removed = await deletePolicy(deps, tenantOf(ctx.auth), pathId(req.params, "policy_id", "fpol"));
    return { body: { policy: presentPolicy(removed), deleted: true } };
  });
  svc.handle("createFraudEvaluation", async (req, ctx) => {
    const body = parseOrThrow(schemas.CreateEvaluationBody, req.body);
    const { idempotency_key, operation, ...fields } = body;
    const recorded = await evaluateMovement(deps, tenantOf(ctx.auth), {
      source: "api",
      key: idempotency_key,
      requestHash: requestHash(body),
      proposal: proposalOf(operation ?? "evaluation", fields),
    });
    const evaluation = presentEvaluation(recorded.evaluation);
    return recorded.duplicate ? { status: 200, body: { evaluation, idempotent: true } } : { status: 201, body: { evaluation } };
  });
  svc.handle("getFraudEvaluation", async (req, ctx) => ({
    body: { evaluation: presentEvaluation(await getEvaluation(deps, tenantOf(ctx.auth), pathId(req.params, "evaluation_id", "feval"))) },
  }));
  svc.handle("configureAlerts", async (req, ctx) => configureAlerts(deps, tenantOf(ctx.auth), req.body));
  svc.handleInternal(
    schemas.RISK_EVALUATE_OPERATION,
    (payload) => parseOrThrow(schemas.RiskEvaluateRequest, payload),
    async (req) => {
      const { org_id: _org, livemode: _livemode, key, operation, ...fields } = req;
      const tenant = tenantOf(req);
      // The tenant's fail modes ride along, so the caller knows them the next time risk cannot answer.
      const [recorded, failModes] = await Promise.all([
        evaluateMovement(deps, tenant, { source: "internal", key, requestHash: requestHash(req), proposal: proposalOf(operation, fields) }),
        deps.failModes.get(tenant),
      ]);
      return { evaluation: presentEvaluation(recorded.evaluation), duplicate: recorded.duplicate, fail_modes: failModes };
    },
  );
}
