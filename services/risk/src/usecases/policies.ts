/**
 * Fraud policies of a tenant: create (the config is checked against its type's schema), list, delete. A deleted
 * policy stops applying at once and stays stored, since past evaluations' hits name it.
 */
import { DomainError, parseOrThrow, schemas, type Tenant } from "@treasury/contracts";
import { POLICIES_PER_TENANT_MAX, POLICY_PRIORITY_DEFAULT, type Policy } from "../domain/policies.ts";
import type { RiskDeps } from "./ports.ts";

const LIST_LIMIT_DEFAULT = 100;

/** Errors: validation_error (the config names the field), policy_limit_reached. */
export async function createPolicy(deps: Pick<RiskDeps, "policies" | "newId" | "now">, tenant: Tenant, body: unknown): Promise<Policy> {
  // Parsed again here: the gateway validates too, but a direct RPC caller may not have.
  const input = parseOrThrow(schemas.CreatePolicyBody, body);
  if ((await deps.policies.countLive(tenant)) >= POLICIES_PER_TENANT_MAX) {
    throw new DomainError("policy_limit_reached", `An org may hold at most ${POLICIES_PER_TENANT_MAX} policies per environment`, {
      hint: "DELETE /v1/fraud/policies/{id} removes one",
    });
  }
  const policy = {
    id: deps.newId("policy"),
    tenant,
    policyType: input.policy_type,
    config: input.config,
    severity: input.severity ?? "hard",
    priority: input.priority ?? POLICY_PRIORITY_DEFAULT,
    appliesTo: [...new Set(input.applies_to ?? schemas.RISK_OPERATIONS)],
    enabled: input.enabled ?? true,
    description: input.description ?? null,
    createdAt: deps.now(tenant),
  } as Policy;
  await deps.policies.insert(policy);
  return policy;
}

export async function listPolicies(deps: Pick<RiskDeps, "policies">, tenant: Tenant, query: unknown): Promise<{ policies: Policy[]; total: number }> {
  const q = parseOrThrow(schemas.ListPoliciesQuery, query, "query");
  return deps.policies.list(tenant, { policyType: q.policy_type, limit: q.limit ?? LIST_LIMIT_DEFAULT, offset: q.offset ?? 0 });
}

/** Errors: policy_not_found (never created in this org and environment, or deleted already). */
export async function deletePolicy(deps: Pick<RiskDeps, "policies" | "now">, tenant: Tenant, id: string): Promise<Policy> {
  const removed = await deps.policies.remove(tenant, id, deps.now(tenant));
  if (removed === undefined) throw new DomainError("policy_not_found", `Policy ${id} not found`, { hint: "GET /v1/fraud/policies lists them" });
  return removed;
}
