/**
 * The tax rows `admin find` reaches: a 1099 document by its id (the documents it corrects or is corrected by are
 * named in its row, and the walk follows them), and a participant's W-9 profile within the org and environment of
 * the row that led there (its key). The sealed TIN is never shown: only its last four digits are in the row. A
 * participant's documents are not looked up by participant (no index serves it; generation would pay for one):
 * a document's id, from its event or the API, finds it.
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, scopedIds, type AdminFinder, type Sql } from "@treasury/service-kit";

const idsOf = (nodes: readonly FindNode[], kind: string): string[] => [...new Set(nodes.filter((n) => n.kind === kind).map((n) => n.id))];

/** Profile columns not shown: the sealed TIN. */
const HIDDEN = ["tin_sealed"];

async function byIds(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const documents = idsOf(nodes, "tax_document");
  if (documents.length === 0) return [];
  return hitsOf("tax.documents", await sql`select * from tax.documents where id = any(${documents}::text[]) order by created_at, id`, true);
}

/** A participant's profile, one statement on the key per org and environment. */
async function byParticipant(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const hits: FindHit[] = [];
  for (const { scope, ids } of scopedIds(nodes, "participant")) {
    const env = scope.livemode === undefined ? sql`` : sql`and livemode = ${scope.livemode}`;
    const where = sql`org_id = ${scope.orgId} ${env} and participant_id = any(${ids}::text[])`;
    hits.push(...hitsOf("tax.profiles", await sql`select * from tax.profiles where ${where}`, false, HIDDEN));
  }
  return hits;
}

export function pgTaxFinder(sql: Sql): AdminFinder {
  return {
    rows: async (r: FindRowsRequest): Promise<FindRowsReply> => ({ hits: [...(await byIds(sql, r.nodes)), ...(await byParticipant(sql, r.nodes))], nodes: [] }),
  };
}
