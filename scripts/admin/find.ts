/**
 * `admin find <id>`: everything the system holds about one id, as one JSON document, for on-call. Starting from
 * the id, it reads the rows that hold it in each service's schema, takes the ids those rows name (a checkout's
 * sale transaction, the sale's hold and refunds, a payout's ledger postings, an event's deliveries…) and reads
 * theirs, level by level, until nothing new turns up. Along the way it searches every service's outbox for
 * events that mention an id of the path (or were caused by a request id of the path), with their webhook
 * deliveries, the consumers that processed them, and their request and trace ids; and the audit log for
 * operator actions on any of the ids.
 *
 * Read-only: one REPEATABLE READ READ ONLY transaction, so every table is read at the same instant.
 *
 * Participants, orgs and wallets lead to everything of theirs: they are shown (with their latest lists when
 * asked for directly) but the walk does not go through them. Events found because they mention an id are shown
 * but not walked through either (a ledger event of a group commit lists other sales too); an event asked for, or
 * caused by a request of the path, is.
 */
import type postgres from "postgres";
import { SERVICES } from "@treasury/contracts";
import { listAudit, type AuditEntry } from "./audit.ts";
import type { Commands } from "./command.ts";
import { classify, HUB_KINDS, idsInRow, traceIdOf, type Kind, type Node } from "./find-ids.ts";
import { LOADERS, plain, Reader, type Hit, type Row } from "./find-sources.ts";

/** Bounds of one walk: how deep, how many ids, how many events per outbox, how many audit rows. */
const LEVELS_MAX = 10;
const NODES_MAX = 500;
const EVENTS_PER_OUTBOX_MAX = 200;
const AUDIT_ROWS_MAX = 100;
/**
 * Outboxes are searched by content (no index can serve "any value equals"): a statement on a large outbox may
 * take a while, but not forever, and the snapshot it holds must not keep vacuum waiting long.
 */
const STATEMENT_TIMEOUT_MS = 30_000;
/** Ledger events of a group commit list many transactions; only those on the path are shown. */
const BATCH_KEY = "transactions";

interface OutboxRow {
  seq: number;
  id: string;
  org_id: string;
  livemode: boolean;
  type: string;
  payload: { data?: Record<string, unknown>; sequence?: number | string };
  headers: Record<string, string>;
  created_at: Date;
  published_at: Date | null;
  attempts: number;
}

interface FoundEvent {
  service: string;
  row: OutboxRow;
  /** Asked for, or caused by a request of the path: its ids are part of the path. */
  walked: boolean;
}

export interface FindResult {
  query: string;
  kinds: Kind[];
  found: boolean;
  org_ids: string[];
  request_ids: string[];
  trace_ids: string[];
  rows: Record<string, Row[]>;
  events: Record<string, unknown>[];
  audit: AuditEntry[];
  /** The walk reached its bounds: some linked rows may be missing (find one of the ids shown to go on). */
  truncated: boolean;
}

/** Outbox rows as read (the kit's table: libs/service-kit migrate.ts), with int8 columns as numbers. */
function outboxRows(rows: postgres.RowList<Row[]>): OutboxRow[] {
  return plain(rows) as unknown as OutboxRow[];
}

const nodeKey = (n: Node): string => `${n.kind}:${n.id}`;

function batchItems(row: OutboxRow): Record<string, unknown>[] | undefined {
  const items = row.payload.data?.[BATCH_KEY];
  return Array.isArray(items) && row.type === "ledger.transaction.posted" ? (items as Record<string, unknown>[]) : undefined;
}

class Walk {
  private readonly rows = new Map<string, Map<string, Row>>();
  private readonly events = new Map<string, FoundEvent>();
  private readonly visited = new Set<string>();
  /** Ids of the path: what the outboxes and the audit log are searched for. */
  private readonly pathIds = new Set<string>();
  private readonly requestIds = new Set<string>();
  private truncated = false;

  constructor(private readonly r: Reader) {}

  async run(seeds: Node[]): Promise<void> {
    let frontier = seeds.filter((n) => this.enqueue(n));
    for (let level = 0; level < LEVELS_MAX && frontier.length > 0; level++) frontier = await this.step(frontier, level === 0);
    if (frontier.length > 0) this.truncated = true;
  }

  /** One level: the rows holding the frontier's ids, then the events naming them. Answers the ids found next. */
  private async step(frontier: Node[], seed: boolean): Promise<Node[]> {
    const next: Node[] = [];
    const take = (nodes: Node[]): void => {
      for (const n of nodes) if (this.enqueue(n)) next.push(n);
    };
    const hits = await this.load(frontier, seed);
    for (const h of hits) {
      this.addRow(h);
      if (h.follow) take(idsInRow(h.row));
    }
    const searched = this.searchedOf(frontier, hits, seed);
    const events = frontier.filter((n) => n.kind === "event").map((n) => n.id);
    const requests = frontier.filter((n) => n.kind === "request").map((n) => n.id);
    for (const id of [...searched, ...events]) this.pathIds.add(id);
    for (const id of requests) this.requestIds.add(id);
    for (const e of [...(await this.eventsById(events)), ...(await this.eventsMentioning(searched, requests))]) take(this.addEvent(e));
    for (const h of await this.processorEvents(searched)) this.addRow(h);
    return next;
  }

  /**
   * The ids of this level that events are searched for: the ids asked for, and every other id except hubs and
   * UUIDs that are not checkout sessions (a wallet's id would bring every event of the wallet).
   */
  private searchedOf(frontier: Node[], hits: Hit[], seed: boolean): string[] {
    if (seed) return frontier.map((n) => n.id);
    const checkouts = new Set(hits.filter((h) => h.table === "payments.checkout_sessions").map((h) => String(h.row["id"])));
    return frontier.filter((n) => !HUB_KINDS.has(n.kind) && n.kind !== "event" && (n.kind !== "uuid" || checkouts.has(n.id))).map((n) => n.id);
  }

  /** Marks a node seen; false when it was, or when the walk is full. */
  private enqueue(n: Node): boolean {
    const key = nodeKey(n);
    if (this.visited.has(key)) return false;
    if (this.visited.size >= NODES_MAX) {
      this.truncated = true;
      return false;
    }
    this.visited.add(key);
    return true;
  }

  private async load(frontier: Node[], seed: boolean): Promise<Hit[]> {
    const byKind = new Map<Kind, Node[]>();
    for (const n of frontier) byKind.set(n.kind, [...(byKind.get(n.kind) ?? []), n]);
    const hits: Hit[] = [];
    for (const [kind, nodes] of byKind) {
      if (kind === "event") continue;
      hits.push(...(await LOADERS[kind](this.r, nodes, seed)));
    }
    return hits;
  }

  private addRow(h: Hit): void {
    const table = this.rows.get(h.table) ?? new Map<string, Row>();
    const id = h.row["id"];
    table.set(typeof id === "string" || typeof id === "number" ? String(id) : JSON.stringify(h.row), h.row);
    this.rows.set(h.table, table);
  }

  /** Records an event; returns the ids it leads to when it is walked (its data, and the request that caused it). */
  private addEvent(e: FoundEvent): Node[] {
    const known = this.events.get(e.row.id);
    if (known !== undefined && (known.walked || !e.walked)) return [];
    this.events.set(e.row.id, e);
    if (!e.walked) return [];
    const scope = { org_id: e.row.org_id, livemode: e.row.livemode };
    const items = batchItems(e.row);
    if (items === undefined) {
      const requestId = e.row.headers["x-request-id"];
      return [...idsInRow({ ...scope, data: e.row.payload.data }), ...(requestId === undefined ? [] : [{ kind: "request" as const, id: requestId }])];
    }
    // A group commit's event: only its transactions of this path (those its request posted, or the one asked for).
    return items.filter((i) => this.onPath(i)).flatMap((i) => idsInRow({ ...scope, ...i }));
  }

  /** A transaction of a group commit's event that belongs to this path: posted by its request, or naming its ids. */
  private onPath(item: Record<string, unknown>): boolean {
    return this.requestIds.has(String(item["request_id"])) || idsInRow(item).some((n) => this.pathIds.has(n.id));
  }

  private async outboxes(): Promise<string[]> {
    const out: string[] = [];
    for (const s of SERVICES) if (await this.r.exists(`${s}.outbox`)) out.push(s);
    return out;
  }

  private async eventsById(ids: string[]): Promise<FoundEvent[]> {
    if (ids.length === 0) return [];
    const out: FoundEvent[] = [];
    for (const service of await this.outboxes()) {
      const rows = await this.r.q<Row[]>`
        select seq, id, org_id, livemode, type, payload, headers, created_at, published_at, attempts
          from ${this.r.q(`${service}.outbox`)} where id = any(${ids}::text[])`;
      out.push(...outboxRows(rows).map((row) => ({ service, row, walked: true })));
    }
    return out;
  }

  /**
   * Events whose payload holds one of `ids` as a value, or that a request of `requests` caused (its id in the
   * headers, or on a group commit's transaction). Outboxes keep events OUTBOX_RETENTION_DAYS after publishing.
   */
  private async eventsMentioning(ids: string[], requests: string[]): Promise<FoundEvent[]> {
    if (ids.length === 0 && requests.length === 0) return [];
    const all = [...new Set([...ids, ...requests])];
    const out: FoundEvent[] = [];
    for (const service of await this.outboxes()) {
      const rows = await this.r.q<Row[]>`
        select seq, id, org_id, livemode, type, payload, headers, created_at, published_at, attempts
          from ${this.r.q(`${service}.outbox`)} o
         where o.headers->>'x-request-id' = any(${requests}::text[])
            or exists (select 1 from jsonb_path_query(o.payload, 'strict $.**') v
                        where jsonb_typeof(v) = 'string' and v #>> '{}' = any(${all}::text[]))
         order by seq desc limit ${EVENTS_PER_OUTBOX_MAX}`;
      if (rows.length >= EVENTS_PER_OUTBOX_MAX) this.truncated = true;
      for (const row of outboxRows(rows)) {
        const caused = requests.includes(row.headers["x-request-id"] ?? "") || (batchItems(row) ?? []).some((i) => requests.includes(String(i["request_id"])));
        out.push({ service, row, walked: caused });
      }
    }
    return out;
  }

  /**
   * The card processor's events as payments received them, found by our ids in their payload (the processor
   * echoes the checkout's and refund's ids in its metadata): whether the processor's word arrived, and what
   * working on it answered. The payload itself (the buyer's card and billing details) is not printed.
   */
  private async processorEvents(ids: string[]): Promise<Hit[]> {
    if (ids.length === 0 || !(await this.r.exists("payments.processor_events"))) return [];
    const rows = await this.r.q<Row[]>`
      select provider, event_id as id, type, livemode, status, outcome, attempts, last_error, next_attempt_at, locked_until, received_at, processed_at
        from payments.processor_events p
       where exists (select 1 from jsonb_path_query(p.payload, 'strict $.**') v
                      where jsonb_typeof(v) = 'string' and v #>> '{}' = any(${ids}::text[]))
       order by received_at desc limit ${EVENTS_PER_OUTBOX_MAX}`;
    return plain(rows).map((row) => ({ table: "payments.processor_events", row, follow: false }));
  }

  async result(query: string, kinds: Kind[], sql: postgres.TransactionSql): Promise<FindResult> {
    const eventIds = [...this.events.keys()];
    const deliveries = await this.deliveries(eventIds);
    const consumed = await this.consumers(eventIds);
    const events = [...this.events.values()]
      .sort((a, b) => a.row.created_at.getTime() - b.row.created_at.getTime() || a.row.seq - b.row.seq)
      .map((e) => this.eventView(e, deliveries.get(e.row.id) ?? [], consumed.get(e.row.id) ?? []));
    const rows = Object.fromEntries([...this.rows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([t, m]) => [t, [...m.values()]]));
    const orgIds = new Set<string>();
    for (const list of Object.values(rows)) for (const r of list) if (typeof r["org_id"] === "string") orgIds.add(r["org_id"]);
    const traces = new Set<string>();
    const requests = new Set(this.requestIds);
    for (const e of events) {
      if (typeof e["trace_id"] === "string") traces.add(e["trace_id"]);
      if (typeof e["request_id"] === "string") requests.add(e["request_id"]);
    }
    // Operator actions on any id of the path, its events and their deliveries (a replay names its delivery).
    const deliveryIds = [...deliveries.values()].flat().map((d) => String(d["id"]));
    const targets = [...new Set([...this.pathIds, ...eventIds, ...deliveryIds])];
    const audit = targets.length === 0 ? [] : await listAudit(sql, { targets, limit: AUDIT_ROWS_MAX });
    return {
      query,
      kinds,
      found: this.rows.size > 0 || this.events.size > 0,
      org_ids: [...orgIds],
      request_ids: [...requests],
      trace_ids: [...traces],
      rows,
      events,
      audit,
      truncated: this.truncated,
    };
  }

  /** An event as on-call reads it: where it stands in the outbox, its request and trace, and its deliveries. */
  private eventView(e: FoundEvent, deliveries: Row[], consumedBy: Row[]): Record<string, unknown> {
    const items = batchItems(e.row);
    const shown = items?.filter((i) => this.onPath(i));
    const requestId = shown?.[0]?.["request_id"] ?? e.row.headers["x-request-id"] ?? null;
    const traceparent = shown?.[0]?.["traceparent"] ?? e.row.headers["traceparent"] ?? null;
    return {
      service: e.service,
      id: e.row.id,
      type: e.row.type,
      org_id: e.row.org_id,
      livemode: e.row.livemode,
      sequence: e.row.payload.sequence === undefined ? null : Number(e.row.payload.sequence),
      created_at: e.row.created_at,
      published_at: e.row.published_at,
      publish_attempts: e.row.attempts,
      request_id: requestId,
      traceparent,
      trace_id: traceIdOf(traceparent) ?? null,
      data: items === undefined ? e.row.payload.data : { [BATCH_KEY]: shown, transactions_in_event: items.length },
      consumed_by: consumedBy,
      deliveries,
    };
  }

  private async deliveries(eventIds: string[]): Promise<Map<string, Row[]>> {
    const out = new Map<string, Row[]>();
    if (eventIds.length === 0 || !(await this.r.exists("webhooks.deliveries"))) return out;
    const rows = await this.r.q<Row[]>`
      select d.id, d.event_id, d.endpoint_id, e.url as endpoint_url, e.is_active as endpoint_active, e.disabled_reason as endpoint_disabled_reason,
             d.status, d.attempts, d.max_attempts, d.response_status, d.response_time_ms, d.last_error, d.next_retry_at, d.lease_until,
             d.created_at, d.updated_at, d.delivered_at
        from webhooks.deliveries d join webhooks.endpoints e on e.id = d.endpoint_id
       where d.event_id = any(${eventIds}::text[]) order by d.created_at`;
    for (const r of plain(rows)) out.set(String(r["event_id"]), [...(out.get(String(r["event_id"])) ?? []), r]);
    return out;
  }

  /** Which consumers (each service's inbox) processed each event, and when. */
  private async consumers(eventIds: string[]): Promise<Map<string, Row[]>> {
    const out = new Map<string, Row[]>();
    if (eventIds.length === 0) return out;
    for (const service of SERVICES) {
      if (!(await this.r.exists(`${service}.inbox`))) continue;
      // The inbox's key is (consumer, event_id): its few consumers are listed by walking the index (a loose index
      // scan), then each is probed for the events, instead of reading the whole inbox.
      const inbox = this.r.q(`${service}.inbox`);
      const rows = await this.r.q<Row[]>`
        with recursive consumers as (
          select min(consumer) as consumer from ${inbox}
          union all
          select (select min(consumer) from ${inbox} where consumer > c.consumer) from consumers c where c.consumer is not null
        )
        select i.consumer, i.event_id, i.processed_at from consumers c join ${inbox} i on i.consumer = c.consumer
         where i.event_id = any(${eventIds}::text[])`;
      for (const r of rows)
        out.set(String(r["event_id"]), [...(out.get(String(r["event_id"])) ?? []), { service, consumer: r["consumer"], processed_at: r["processed_at"] }]);
    }
    return out;
  }
}

/** Everything about `id` (see the module comment). `orgId` narrows client-chosen ids (participants, sale references). */
export async function find(sql: postgres.Sql, id: string, opts: { orgId?: string | undefined } = {}): Promise<FindResult> {
  const query = id.trim();
  if (query === "" || query.length > 255) throw new Error("find needs an id of 1–255 characters");
  const kinds = classify(query);
  const scope = opts.orgId === undefined ? undefined : { orgId: opts.orgId };
  const seeds = kinds.map((kind) => ({ kind, id: kind === "uuid" ? query.toLowerCase() : query, scope }));
  return (await sql.begin("isolation level repeatable read read only", async (tx) => {
    await tx`select set_config('statement_timeout', ${String(STATEMENT_TIMEOUT_MS)}, true)`;
    const walk = new Walk(new Reader(tx));
    await walk.run(seeds);
    return walk.result(query, kinds, tx);
  })) as FindResult;
}

export const findCommands: Commands = {
  find: {
    usage:
      "find ID [--org ID]   → {query, kinds, found, org_ids, request_ids, trace_ids, rows: {<schema.table>: […]}, events, audit, truncated}; exits 1 when nothing holds the id",
    positionals: 1,
    async run(ctx) {
      const result = await find(ctx.sql, ctx.positionals[0] ?? "", { orgId: ctx.values.org });
      if (!result.found) process.exitCode = 1;
      return result;
    },
  },
};
