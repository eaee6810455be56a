/**
 * What `admin find` reads in the webhooks schema: deliveries and endpoints by id (never a body a receiver was sent,
 * nor a signing secret), and the deliveries of the events a walk found, each with its endpoint.
 */
import { ADMIN_FANOUT_OPERATIONS, FindDeliveriesRequest, parseOrThrow, type FindHit, type FindNode, type FindRowsReply } from "@treasury/contracts";
import { hitsOf, plainRows, type AdminFinder, type Service, type Sql } from "@treasury/service-kit";

const OMIT: Record<string, readonly string[]> = {
  "webhooks.deliveries": ["body"],
  "webhooks.endpoints": ["secret", "previous_secret", "secret_sealed", "previous_secret_sealed"],
};

/**
 * Rows of `table` by id for the nodes of `kind`. A row found for a node asked for without an org comes back as
 * that node in the row's org and environment: other services answer scoped lookups for it.
 */
async function byId(sql: Sql, table: string, kind: string, nodes: readonly FindNode[], follow: boolean): Promise<FindRowsReply> {
  const ofKind = nodes.filter((n) => n.kind === kind);
  if (ofKind.length === 0) return { hits: [], nodes: [] };
  const ids = [...new Set(ofKind.map((n) => n.id))];
  const hits: FindHit[] = hitsOf(table, await sql`select * from ${sql(table)} where id = any(${ids}::text[])`, follow, OMIT[table]);
  const unscoped = new Set(ofKind.filter((n) => n.scope === undefined).map((n) => n.id));
  const scoped = hits
    .filter((h) => unscoped.has(String(h.row["id"])))
    .map((h) => ({ kind, id: String(h.row["id"]), scope: { orgId: String(h.row["org_id"]), livemode: h.row["livemode"] === true } }));
  return { hits, nodes: scoped };
}

export function pgFinder(sql: Sql): AdminFinder {
  return {
    async rows({ nodes }) {
      const deliveries = await byId(sql, "webhooks.deliveries", "delivery", nodes, true);
      const endpoints = await byId(sql, "webhooks.endpoints", "endpoint", nodes, false);
      return { hits: [...deliveries.hits, ...endpoints.hits], nodes: [...deliveries.nodes, ...endpoints.nodes] };
    },
  };
}

/** Each event's deliveries, oldest first, with where they go and whether that endpoint still takes them. */
async function deliveriesOf(sql: Sql, eventIds: readonly string[]): Promise<Record<string, unknown>[]> {
  if (eventIds.length === 0) return [];
  return plainRows(
    await sql`
    select d.id, d.event_id, d.endpoint_id, e.url as endpoint_url, e.is_active as endpoint_active, e.disabled_reason as endpoint_disabled_reason,
           d.status, d.attempts, d.max_attempts, d.response_status, d.response_time_ms, d.last_error, d.next_retry_at, d.lease_until,
           d.created_at, d.updated_at, d.delivered_at
      from webhooks.deliveries d join webhooks.endpoints e on e.id = d.endpoint_id
     where d.event_id = any(${eventIds}::text[]) order by d.created_at`,
  );
}

export function registerAdminFind(svc: Pick<Service, "adminFind" | "handleInternal">, sql: Sql): void {
  svc.adminFind(pgFinder(sql));
  svc.handleInternal(
    ADMIN_FANOUT_OPERATIONS.findDeliveries,
    (payload) => parseOrThrow(FindDeliveriesRequest, payload, "find request"),
    async (request) => ({ deliveries: await deliveriesOf(sql, request.event_ids) }),
  );
}
