/**
 * The risk rows `admin find` reaches: an evaluation by its id (with its hits and alerts), a policy by its id, and
 * the evaluation of a checkout found by its session id within its org and environment (the key the money path
 * evaluated it under, `checkout:<session id>`, when the client sent no idempotency key); and an evaluation by its
 * key, named by the service that asked (a payout's `risk_key` node, `payout:<reference_id>`). Refunds are
 * evaluated under their client's request keys, which no row of theirs names.
 * The request's hash is not shown (it is the idempotency check's, not the operator's).
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, scopedIds, type AdminFinder, type Sql } from "@treasury/service-kit";

const idsOf = (nodes: readonly FindNode[], kind: string): string[] => [...new Set(nodes.filter((n) => n.kind === kind).map((n) => n.id))];

/** The movements whose evaluations a node leads to, by the kind of id it is (`risk_key`: the key itself). */
const KEY_PREFIXES: Readonly<Record<string, string | null>> = { uuid: "checkout", risk_key: null };
/** Evaluation columns not shown: the request's hash. */
const HIDDEN = ["request_hash"];

async function byIds(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const evaluations = idsOf(nodes, "risk_evaluation");
  const policies = idsOf(nodes, "fraud_policy");
  const hits: FindHit[] = [];
  if (evaluations.length > 0) {
    hits.push(...hitsOf("risk.evaluations", await sql`select * from risk.evaluations where id = any(${evaluations}::text[])`, true, HIDDEN));
    hits.push(...hitsOf("risk.evaluation_hits", await sql`select * from risk.evaluation_hits where evaluation_id = any(${evaluations}::text[])`, true));
    hits.push(...hitsOf("risk.alert_deliveries", await sql`select * from risk.alert_deliveries where evaluation_id = any(${evaluations}::text[])`, false));
  }
  if (policies.length > 0) hits.push(...hitsOf("risk.policies", await sql`select * from risk.policies where id = any(${policies}::text[])`, false));
  return hits;
}

async function byMovement(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const hits: FindHit[] = [];
  for (const [kind, prefix] of Object.entries(KEY_PREFIXES)) {
    for (const { scope, ids } of scopedIds(nodes, kind)) {
      const keys = ids.map((id) => (prefix === null ? id : `${prefix}:${id}`));
      const env = scope.livemode === undefined ? sql`` : sql`and livemode = ${scope.livemode}`;
      const rows = await sql`select * from risk.evaluations where org_id = ${scope.orgId} ${env} and source = 'internal' and key = any(${keys}::text[])`;
      hits.push(...hitsOf("risk.evaluations", rows, true, HIDDEN));
    }
  }
  return hits;
}

export function pgRiskFinder(sql: Sql): AdminFinder {
  return {
    rows: async (r: FindRowsRequest): Promise<FindRowsReply> => ({ hits: [...(await byIds(sql, r.nodes)), ...(await byMovement(sql, r.nodes))], nodes: [] }),
  };
}
