/**
 * What every service answers to the operator's `audit list` and `find` (ADR 0016): its audit rows, the events of
 * its outbox that name an id, and which of its consumers processed an event. A service that holds rows an id can
 * lead to adds a finder (`svc.adminFind`); one with a record of operator decisions of its own adds it to its
 * audit answer (`svc.adminAuditSource`).
 */
import type postgres from "postgres";
import type {
  AuditEntry,
  AuditListRequest,
  FindEventsReply,
  FindEventsRequest,
  FindHit,
  FindRowsReply,
  FindRowsRequest,
  FindScope,
  FoundEventRow,
} from "@treasury/contracts";
import type { Sql } from "./db.ts";

/** How many events one outbox answers per search; more matching ones make the walk say it is truncated. */
export const FIND_EVENTS_MAX = 200;

export interface AdminFinder {
  /** The service's rows holding these ids, and the ids of other services' rows they lead to. */
  rows?(request: FindRowsRequest): Promise<FindRowsReply>;
  /** Rows the service keeps of what others told it (not its outbox) whose payload names one of these ids. */
  mentions?(ids: readonly string[]): Promise<FindHit[]>;
}

export type AuditSource = (filter: AuditListRequest) => Promise<AuditEntry[]>;

const INT8_OID = 20;

/** Rows as JSON-ready objects without the columns named (secrets, sealed data): int8 columns become numbers when exact. */
export function plainRows(rows: postgres.RowList<postgres.Row[]>, omit: readonly string[] = []): Record<string, unknown>[] {
  const int8 = (rows.columns ?? []).filter((c) => c.type === INT8_OID).map((c) => c.name);
  return rows.map((r) => {
    const out: Record<string, unknown> = { ...r };
    for (const k of omit) delete out[k];
    for (const k of int8) {
      const v = out[k];
      if (typeof v === "string" && Number.isSafeInteger(Number(v))) out[k] = Number(v);
    }
    return out;
  });
}

/**
 * The ids of scoped nodes (of `kind`, when given), grouped by org and environment: a lookup by a column other than
 * a table's key is one indexed statement per group (every unique key starts with org_id, livemode). Unscoped
 * nodes are left out.
 */
export function scopedIds(
  nodes: readonly { id: string; kind?: string; scope?: FindScope | undefined }[],
  kind?: string,
): { scope: FindScope; ids: string[] }[] {
  const groups = new Map<string, { scope: FindScope; ids: Set<string> }>();
  for (const n of nodes) {
    if ((kind !== undefined && n.kind !== kind) || n.scope === undefined) continue;
    const key = `${n.scope.orgId}|${String(n.scope.livemode)}`;
    const g = groups.get(key) ?? { scope: n.scope, ids: new Set<string>() };
    g.ids.add(n.id);
    groups.set(key, g);
  }
  return [...groups.values()].map((g) => ({ scope: g.scope, ids: [...g.ids] }));
}

/** Rows of one table as hits. */
export function hitsOf(table: string, rows: postgres.RowList<postgres.Row[]>, follow: boolean, omit: readonly string[] = []): FindHit[] {
  return plainRows(rows, omit).map((row) => ({ table, row, follow }));
}

function actionFilter(sql: Sql, action: string | undefined): postgres.PendingQuery<postgres.Row[]> {
  if (action === undefined) return sql``;
  return action.includes(".") ? sql`and action = ${action}` : sql`and action like ${`${action}.%`}`;
}

/** The service's audit rows matching the filter, newest first, with what its own sources add. */
export async function listAuditLog(sql: Sql, schema: string, f: AuditListRequest, sources: readonly AuditSource[]): Promise<{ entries: AuditEntry[] }> {
  const rows = await sql<AuditEntry[]>`
    select ${`${schema}.audit_log`} as source, id::text as id, at, actor, action, org_id, livemode, target_ids, reason, outcome,
           error_code, error, details
      from ${sql(`${schema}.audit_log`)}
     where true
       ${f.org_id === undefined ? sql`` : sql`and org_id = ${f.org_id}`}
       ${actionFilter(sql, f.action)}
       ${f.since === undefined ? sql`` : sql`and at >= ${f.since}`}
       ${f.targets === undefined ? sql`` : sql`and target_ids && ${f.targets}::text[]`}
     order by at desc, id desc
     limit ${f.limit}`;
  const extra = (await Promise.all(sources.map((s) => s(f)))).flat();
  const entries = [...rows, ...extra].sort((a, b) => new Date(b.at).getTime() - new Date(a.at).getTime()).slice(0, f.limit);
  return { entries };
}

const EVENT_COLUMNS = "seq, id, org_id, livemode, type, payload, headers, created_at, published_at, attempts";

/**
 * Events asked for by id, and events whose payload holds one of `ids` as a value or that a request of `requests`
 * caused (its id in the headers, or on one transaction of a group commit). Outboxes keep events
 * OUTBOX_RETENTION_DAYS after publishing. With who among this service's consumers processed `consumed`.
 */
export async function findEvents(sql: Sql, schema: string, r: FindEventsRequest, finder: AdminFinder | undefined): Promise<FindEventsReply> {
  const outbox = sql(`${schema}.outbox`);
  const byId = r.event_ids.length === 0 ? [] : await sql.unsafe(`select ${EVENT_COLUMNS} from "${schema}".outbox where id = any($1::text[])`, [r.event_ids]);
  const all = [...new Set([...r.ids, ...r.requests])];
  const mentioning =
    all.length === 0
      ? []
      : await sql`
          select ${sql.unsafe(EVENT_COLUMNS)} from ${outbox} o
           where o.headers->>'x-request-id' = any(${r.requests}::text[])
              or exists (select 1 from jsonb_path_query(o.payload, 'strict $.**') v
                          where jsonb_typeof(v) = 'string' and v #>> '{}' = any(${all}::text[]))
           order by seq desc limit ${FIND_EVENTS_MAX}`;
  const hits = r.ids.length === 0 || finder?.mentions === undefined ? [] : await finder.mentions(r.ids);
  return {
    events: [
      ...plainRows(byId as postgres.RowList<postgres.Row[]>).map((row) => ({ row: row as unknown as FoundEventRow, by_id: true })),
      ...plainRows(mentioning as postgres.RowList<postgres.Row[]>).map((row) => ({ row: row as unknown as FoundEventRow, by_id: false })),
    ],
    hits,
    consumed: await consumers(sql, schema, r.consumed),
    truncated: mentioning.length >= FIND_EVENTS_MAX,
  };
}

/**
 * Which of this service's consumers processed each event, and when. The inbox's key is (consumer, event_id): its
 * few consumers are listed by walking the index (a loose index scan), then each is probed for the events, instead
 * of reading the whole inbox.
 */
async function consumers(sql: Sql, schema: string, eventIds: readonly string[]): Promise<FindEventsReply["consumed"]> {
  if (eventIds.length === 0) return [];
  const inbox = sql(`${schema}.inbox`);
  return sql<FindEventsReply["consumed"]>`
    with recursive consumers as (
      select min(consumer) as consumer from ${inbox}
      union all
      select (select min(consumer) from ${inbox} where consumer > c.consumer) from consumers c where c.consumer is not null
    )
    select i.consumer, i.event_id, i.processed_at from consumers c join ${inbox} i on i.consumer = c.consumer
     where i.event_id = any(${eventIds}::text[])`;
}
