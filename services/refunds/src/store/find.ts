/**
 * The refunds service's rows as `admin find` shows them (ADR 0016): refunds and refund requests by id, and both by
 * the sale they refund. Request hashes are left out (noise to an operator). A sale reference is a client's (or
 * `checkout:<session id>`), unique only within an org and environment: it is looked up within the scope of the row
 * that named it, on the tables' (org_id, livemode, sale_reference) indexes.
 */
import type { FindHit, FindScope } from "@treasury/contracts";
import { hitsOf, scopedIds } from "@treasury/service-kit";
import type { Q } from "./db.ts";

const OMIT_HASH = ["request_hash"] as const;

type Row = Record<string, unknown>;

export interface ScopedId {
  scope: FindScope;
  id: string;
}

export async function refundsById(q: Q, ids: readonly string[]): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  return hitsOf("refunds.refunds", await q<Row[]>`select * from refunds.refunds where id = any(${[...ids]}::text[])`, true, OMIT_HASH);
}

export async function refundRequestsById(q: Q, ids: readonly string[]): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  const rows = await q<Row[]>`select * from refunds.refund_requests where id = any(${[...ids]}::text[])`;
  return hitsOf("refunds.refund_requests", rows, true, OMIT_HASH);
}

/** A sale's refunds and its buyers' refund requests, within each sale reference's org (and environment, when known). */
export async function bySaleReference(q: Q, items: readonly ScopedId[]): Promise<FindHit[]> {
  const refunds: FindHit[] = [];
  const requests: FindHit[] = [];
  for (const { scope, ids } of scopedIds(items)) {
    const where = q`org_id = ${scope.orgId} ${scope.livemode === undefined ? q`` : q`and livemode = ${scope.livemode}`} and sale_reference = any(${ids}::text[])`;
    refunds.push(...hitsOf("refunds.refunds", await q<Row[]>`select * from refunds.refunds where ${where}`, true, OMIT_HASH));
    requests.push(...hitsOf("refunds.refund_requests", await q<Row[]>`select * from refunds.refund_requests where ${where}`, true, OMIT_HASH));
  }
  return [...refunds, ...requests];
}
