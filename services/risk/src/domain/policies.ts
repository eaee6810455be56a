/** Fraud policies as the risk service holds them, and how the API shows them. Pure: no I/O, no clock. */
import { schemas, type Tenant } from "@treasury/contracts";

export type PolicyType = schemas.PolicyType;
export type Severity = (typeof schemas.POLICY_SEVERITIES)[number];
export type RiskOperation = schemas.RiskOperation;

/** A policy with its config checked against its type's schema. */
export type TypedPolicy = {
  [T in PolicyType]: { policyType: T; config: schemas.PolicyConfig<T> };
}[PolicyType];

export type Policy = TypedPolicy & {
  id: string;
  tenant: Tenant;
  severity: Severity;
  /** Lower first; ties by id, so the order of hits is stable. */
  priority: number;
  appliesTo: RiskOperation[];
  enabled: boolean;
  description: string | null;
  createdAt: Date;
};

/** Defaults of a new policy: hard, priority 100, every operation, enabled. */
export const POLICY_PRIORITY_DEFAULT = 100;
/** A tenant holds at most this many policies: every evaluation reads them all. */
export const POLICIES_PER_TENANT_MAX = 100;

/** Parses a stored config with its type's schema: a row that no longer parses is a bug, not a 400. */
export function typedPolicy(policyType: string, config: unknown): TypedPolicy {
  const schema = (schemas.PolicyConfigs as Record<string, { parse(v: unknown): unknown } | undefined>)[policyType];
  if (schema === undefined) throw new Error(`unknown policy type in store: ${policyType}`);
  return { policyType, config: schema.parse(config) } as TypedPolicy;
}

/** The policies an operation is evaluated against, in the order they apply. */
export function applicable(policies: readonly Policy[], operation: RiskOperation): Policy[] {
  return policies
    .filter((p) => p.enabled && p.appliesTo.includes(operation))
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function presentPolicy(p: Policy): Record<string, unknown> {
  return {
    id: p.id,
    policy_type: p.policyType,
    config: p.config,
    severity: p.severity,
    priority: p.priority,
    applies_to: p.appliesTo,
    enabled: p.enabled,
    description: p.description,
    livemode: p.tenant.livemode,
    created_at: p.createdAt.toISOString(),
  };
}
