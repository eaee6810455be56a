/** SQL of fraud policies (risk.policies). */
import type { Tenant } from "@treasury/contracts";
import type { Sql } from "@treasury/service-kit";
import type postgres from "postgres";
import { typedPolicy, type Policy, type RiskOperation, type Severity } from "../domain/policies.ts";
import type { PolicyStore } from "../usecases/ports.ts";
import { sharedPerTurn } from "./turn-reads.ts";

interface Row {
  id: string;
  org_id: string;
  livemode: boolean;
  policy_type: string;
  config: unknown;
  severity: Severity;
  priority: number;
  applies_to: RiskOperation[];
  enabled: boolean;
  description: string | null;
  created_at: Date;
}

function policyOf(r: Row): Policy {
  return {
    ...typedPolicy(r.policy_type, r.config),
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    severity: r.severity,
    priority: r.priority,
    appliesTo: r.applies_to,
    enabled: r.enabled,
    description: r.description,
    createdAt: r.created_at,
  };
}

export function pgPolicyStore(sql: Sql): PolicyStore {
  return {
    async insert(p) {
      await sql`
        insert into risk.policies (id, org_id, livemode, policy_type, config, severity, priority, applies_to, enabled, description, created_at)
        values (${p.id}, ${p.tenant.orgId}, ${p.tenant.livemode}, ${p.policyType}, ${sql.json(p.config as postgres.JSONValue)}, ${p.severity},
                ${p.priority}, ${p.appliesTo}, ${p.enabled}, ${p.description}, ${p.createdAt})`;
    },
    async countLive(t: Tenant) {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from risk.policies where org_id = ${t.orgId} and livemode = ${t.livemode} and deleted_at is null`;
      return row?.n ?? 0;
    },
    async list(t, q) {
      const type = q.policyType ?? null;
      const rows = await sql<Row[]>`
        select * from risk.policies
        where org_id = ${t.orgId} and livemode = ${t.livemode} and deleted_at is null and (${type}::text is null or policy_type = ${type})
        order by created_at, id limit ${q.limit} offset ${q.offset}`;
      const [count] = await sql<{ n: number }[]>`
        select count(*)::int as n from risk.policies
        where org_id = ${t.orgId} and livemode = ${t.livemode} and deleted_at is null and (${type}::text is null or policy_type = ${type})`;
      return { policies: rows.map(policyOf), total: count?.n ?? 0 };
    },
    // Evaluations of a tenant arriving in one turn share the read (turn-reads.ts).
    enabled: sharedPerTurn(async (t) => {
      const rows = await sql<Row[]>`
        select * from risk.policies
        where org_id = ${t.orgId} and livemode = ${t.livemode} and enabled and deleted_at is null
        order by priority, id`;
      return rows.map(policyOf);
    }),
    async remove(t, id, at) {
      const [row] = await sql<Row[]>`
        update risk.policies set deleted_at = ${at}
        where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode} and deleted_at is null
        returning *`;
      return row === undefined ? undefined : policyOf(row);
    },
  };
}
