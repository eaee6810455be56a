/**
 * What the receipts service holds for the operator's `admin find` (ADR 0016): a receipt by its id, and a ledger
 * transaction's receipt and proof. A transaction id is looked up only with the org and environment of the row
 * that named it, so the lookup uses the tables' keys (both start with org_id, livemode). A proof is shown without
 * its signed payload and signature.
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, scopedIds, type AdminFinder } from "@treasury/service-kit";
import type { Sql } from "../store/db.ts";

const PROOF_OMIT = ["canonical_payload", "signature_jws"];

/** A receipt by its id; asked for without an org, the same id with the receipt's org and environment. */
async function receipts(sql: Sql, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  if (nodes.length === 0) return { hits: [], nodes: [] };
  const ids = [...new Set(nodes.map((n) => n.id))];
  const hits = hitsOf("receipts.receipts", await sql`select * from receipts.receipts where id = any(${ids}::text[])`, true);
  const unscoped = nodes.filter((n) => n.scope === undefined);
  const scoped = hits.flatMap((h) =>
    unscoped
      .filter((n) => n.id === h.row["id"])
      .map((n) => ({ kind: n.kind, id: n.id, scope: { orgId: String(h.row["org_id"]), livemode: h.row["livemode"] as boolean } })),
  );
  return { hits, nodes: scoped };
}

/** A ledger transaction's receipt (a sale's) and its proof, within the org and environment that named it. */
async function transactions(sql: Sql, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const hits: FindHit[] = [];
  for (const { scope, ids } of scopedIds(nodes)) {
    const where = () => sql`org_id = ${scope.orgId} ${scope.livemode === undefined ? sql`` : sql`and livemode = ${scope.livemode}`}`;
    hits.push(...hitsOf("receipts.receipts", await sql`select * from receipts.receipts where ${where()} and sale_transaction_id = any(${ids}::text[])`, true));
    hits.push(
      ...hitsOf("receipts.proofs", await sql`select * from receipts.proofs where ${where()} and transaction_id = any(${ids}::text[])`, false, PROOF_OMIT),
    );
  }
  return { hits, nodes: [] };
}

async function rows(sql: Sql, request: FindRowsRequest): Promise<FindRowsReply> {
  const of = (kind: string) => request.nodes.filter((n) => n.kind === kind);
  const found = [await receipts(sql, of("receipt")), await transactions(sql, of("transaction"))];
  return { hits: found.flatMap((f) => f.hits), nodes: found.flatMap((f) => f.nodes) };
}

/** The finder of `admin find` over the receipts service's own schema. */
export function pgFinder(sql: Sql): AdminFinder {
  return { rows: (request) => rows(sql, request) };
}
