/**
 * What the refunds service answers `admin find` (ADR 0016): its rows each id leads to (store/find.ts), read in one
 * read-only snapshot, and the ids other services answer for next: a refund's ledger transaction by the reference
 * the refund posted with (the ledger answers it, even before the refund recorded the transaction's id), and a
 * refund asked for without an org with its row's org and environment (payments looks its card refund up within
 * them).
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest, FindScope } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import type { Q, Sql } from "../store/db.ts";
import { bySaleReference, refundRequestsById, refundsById, type ScopedId } from "../store/find.ts";
import { REFUND_KIND } from "../usecases/execute-refund.ts";

type Loader = (q: Q, nodes: readonly FindNode[]) => Promise<FindRowsReply>;

const idsOf = (nodes: readonly FindNode[]): string[] => [...new Set(nodes.map((n) => n.id))];
const scopeOfRow = (row: Record<string, unknown>): FindScope => ({ orgId: String(row["org_id"]), livemode: row["livemode"] as boolean });
const only = (hits: FindHit[]): FindRowsReply => ({ hits, nodes: [] });

async function refunds(q: Q, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const hits = await refundsById(q, idsOf(nodes));
  const unscoped = new Set(idsOf(nodes.filter((n) => n.scope === undefined)));
  const next = hits.flatMap((h): FindNode[] => {
    const id = String(h.row["id"]);
    const scope = scopeOfRow(h.row);
    const posting: FindNode = { kind: "ledger_reference", id: `${REFUND_KIND}|${String(h.row["ledger_reference"])}`, scope };
    return unscoped.has(id) ? [posting, { kind: "refund", id, scope }] : [posting];
  });
  return { hits, nodes: next };
}

/** A sale reference answers only within the org (and environment) of the row that named it. */
async function sales(q: Q, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const scoped = nodes.flatMap((n): ScopedId[] => (n.scope === undefined ? [] : [{ scope: n.scope, id: n.id }]));
  return only(await bySaleReference(q, scoped));
}

const LOADERS: ReadonlyMap<string, Loader> = new Map<string, Loader>([
  ["refund", refunds],
  ["refund_request", async (q, nodes) => only(await refundRequestsById(q, idsOf(nodes)))],
  ["sale", sales],
]);

/** Each kind's nodes go to its loader; kinds the service holds no rows for are left to the other services. */
export async function findRows(q: Q, request: FindRowsRequest): Promise<FindRowsReply> {
  const reply: FindRowsReply = { hits: [], nodes: [] };
  for (const [kind, loader] of LOADERS) {
    const nodes = request.nodes.filter((n) => n.kind === kind);
    if (nodes.length === 0) continue;
    const found = await loader(q, nodes);
    reply.hits.push(...found.hits);
    reply.nodes.push(...found.nodes);
  }
  return reply;
}

export function registerAdminFind(svc: Pick<Service, "adminFind">, sql: Sql): void {
  svc.adminFind({ rows: (request) => sql.begin("read only isolation level repeatable read", (tx) => findRows(tx, request)) });
}
