/**
 * What `admin find` reads in the gateway's schema: orgs and API keys by id, never a key's hash. An org asked for
 * shows its newest keys; the walk does not go through an org (it leads to everything of its own).
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, type AdminFinder, type Sql } from "@treasury/service-kit";

/** Keys shown with an org asked for, newest first. */
const KEYS_LIST_LIMIT = 20;
const API_KEYS_OMIT = ["key_hash"];

function idsOf(nodes: readonly FindNode[], kind: string): string[] {
  return [...new Set(nodes.filter((n) => n.kind === kind).map((n) => n.id))];
}

async function orgs(sql: Sql, ids: string[], seed: boolean): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  const hits = hitsOf("gateway.orgs", await sql`select * from gateway.orgs where id = any(${ids}::text[])`, false);
  if (!seed) return hits;
  const keys = await sql`select * from gateway.api_keys where org_id = any(${ids}::text[]) order by created_at desc limit ${KEYS_LIST_LIMIT}`;
  return [...hits, ...hitsOf("gateway.api_keys", keys, false, API_KEYS_OMIT)];
}

async function apiKeys(sql: Sql, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const ids = idsOf(nodes, "api_key");
  if (ids.length === 0) return { hits: [], nodes: [] };
  const hits = hitsOf("gateway.api_keys", await sql`select * from gateway.api_keys where id = any(${ids}::text[])`, true, API_KEYS_OMIT);
  // A key asked for without an org comes back with its own: other services answer scoped lookups for it.
  const unscoped = new Set(nodes.filter((n) => n.kind === "api_key" && n.scope === undefined).map((n) => n.id));
  const scoped = hits
    .filter((h) => unscoped.has(String(h.row["id"])))
    .map((h) => ({ kind: "api_key", id: String(h.row["id"]), scope: { orgId: String(h.row["org_id"]), livemode: h.row["livemode"] === true } }));
  return { hits, nodes: scoped };
}

export function pgFinder(sql: Sql): AdminFinder {
  return {
    async rows(request: FindRowsRequest): Promise<FindRowsReply> {
      const keys = await apiKeys(sql, request.nodes);
      return { hits: [...(await orgs(sql, idsOf(request.nodes, "org"), request.seed)), ...keys.hits], nodes: keys.nodes };
    },
  };
}
