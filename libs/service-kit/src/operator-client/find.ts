/**
 * `admin find <id>`: everything the system holds about one id, as one JSON document, for on-call. Starting from
 * the id, it reads the rows that hold it in each service's schema, takes the ids those rows name (a checkout's
 * sale transaction, the sale's hold and refunds, a payout's ledger postings, an event's deliveries…) and reads
 * theirs, level by level, until nothing new turns up. Along the way it searches every service's outbox for
 * events that mention an id of the path (or were caused by a request id of the path), with their webhook
 * deliveries, the consumers that processed them, and their request and trace ids; and the audit log for
 * operator actions on any of the ids.
 *
 * Each service answers for its own schema over NATS (ADR 0016): the CLI asks all of them, level by level, and
 * merges. Read-only. The services read at slightly different instants (there is no snapshot across databases of
 * separate services); a service that does not answer is listed under `unanswered` and the path lacks its rows.
 *
 * Participants, orgs and wallets lead to everything of theirs: they are shown (with their latest lists when
 * asked for directly) but the walk does not go through them. Events found because they mention an id are shown
 * but not walked through either (a ledger event of a group commit lists other sales too); an event asked for, or
 * caused by a request of the path, is.
 */
import {
  ADMIN_FANOUT_OPERATIONS,
  type AuditEntry,
  type FindDeliveriesReply,
  type FindEventsReply,
  type FindEventsRequest,
  type FindHit,
  type FindRowsReply,
  type FoundEventRow,
} from "@treasury/contracts";
import { listAudit } from "./audit.ts";
import type { AdminClient, Unanswered } from "./client.ts";
import { classify, HUB_KINDS, idsInRow, traceIdOf, type Kind, type Node } from "./find-ids.ts";

type Row = Record<string, unknown>;
type Hit = FindHit;

/** Bounds of one walk: how deep, how many ids, how many audit rows. */
const LEVELS_MAX = 10;
const NODES_MAX = 500;
const AUDIT_ROWS_MAX = 100;
/** Ledger events of a group commit list many transactions; only those on the path are shown. */
const BATCH_KEY = "transactions";

interface FoundEvent {
  service: string;
  row: FoundEventRow;
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
  /** Services that did not answer (not deployed, or down): their rows are missing from the path. */
  unanswered?: Unanswered[];
}

/** A node's scope is part of its identity: the same id found in an org's row is looked up again within that org. */
const nodeKey = (n: Node): string => `${n.kind}:${n.id}:${n.scope?.orgId ?? ""}:${String(n.scope?.livemode ?? "")}`;

function batchItems(row: FoundEventRow): Record<string, unknown>[] | undefined {
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
  private readonly unanswered = new Map<string, Unanswered>();
  private truncated = false;

  constructor(private readonly client: AdminClient) {}

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
    const { hits, nodes } = await this.load(frontier, seed);
    for (const h of hits) {
      this.addRow(h);
      if (h.follow) take(idsInRow(h.row));
    }
    take(nodes);
    const searched = this.searchedOf(frontier, hits, seed);
    const events = frontier.filter((n) => n.kind === "event").map((n) => n.id);
    const requests = frontier.filter((n) => n.kind === "request").map((n) => n.id);
    for (const id of [...searched, ...events]) this.pathIds.add(id);
    for (const id of requests) this.requestIds.add(id);
    for (const e of await this.searchEvents({ event_ids: events, ids: searched, requests, consumed: [] })) take(this.addEvent(e));
    return next;
  }

  /**
   * The ids of this level that events are searched for: the ids asked for, and every other id except hubs and
   * UUIDs that are not checkout sessions (a wallet's id would bring every event of the wallet).
   */
  private searchedOf(frontier: Node[], hits: Hit[], seed: boolean): string[] {
    const ids = (ns: Node[]): string[] => [...new Set(ns.map((n) => n.id))];
    if (seed) return ids(frontier);
    const checkouts = new Set(hits.filter((h) => h.table === "payments.checkout_sessions").map((h) => String(h.row["id"])));
    const lookups = new Set<string>(["ledger_reference", "participant_lists"]);
    return ids(frontier.filter((n) => !HUB_KINDS.has(n.kind) && !lookups.has(n.kind) && n.kind !== "event" && (n.kind !== "uuid" || checkouts.has(n.id))));
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

  private note(unanswered: Unanswered[]): void {
    for (const u of unanswered) this.unanswered.set(u.service, u);
  }

  /** Every service's rows for the frontier (events are the outboxes', searched separately). */
  private async load(frontier: Node[], seed: boolean): Promise<{ hits: Hit[]; nodes: Node[] }> {
    const nodes = frontier.filter((n) => n.kind !== "event").map((n) => ({ kind: n.kind, id: n.id, ...(n.scope === undefined ? {} : { scope: n.scope }) }));
    if (nodes.length === 0) return { hits: [], nodes: [] };
    const { answers, unanswered } = await this.client.fanOut<FindRowsReply>(ADMIN_FANOUT_OPERATIONS.findRows, { nodes, seed });
    this.note(unanswered);
    return { hits: answers.flatMap((a) => a.body.hits), nodes: answers.flatMap((a) => a.body.nodes as Node[]) };
  }

  /** Events of every outbox for the request; rows services keep of others' events are added to the path. */
  private async searchEvents(request: FindEventsRequest): Promise<FoundEvent[]> {
    if (request.event_ids.length === 0 && request.ids.length === 0 && request.requests.length === 0) return [];
    const { answers, unanswered } = await this.client.fanOut<FindEventsReply>(ADMIN_FANOUT_OPERATIONS.findEvents, request);
    this.note(unanswered);
    const out: FoundEvent[] = [];
    for (const { service, body } of answers) {
      if (body.truncated) this.truncated = true;
      for (const h of body.hits) this.addRow(h);
      for (const { row, by_id } of body.events) out.push({ service, row, walked: by_id || this.causedByPath(row, request.requests) });
    }
    return out;
  }

  private causedByPath(row: FoundEventRow, requests: readonly string[]): boolean {
    return requests.includes(row.headers["x-request-id"] ?? "") || (batchItems(row) ?? []).some((i) => requests.includes(String(i["request_id"])));
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

  async result(query: string, kinds: Kind[]): Promise<FindResult> {
    const eventIds = [...this.events.keys()];
    const deliveries = await this.deliveries(eventIds);
    const consumed = await this.consumers(eventIds);
    const events = [...this.events.values()]
      .sort((a, b) => new Date(a.row.created_at).getTime() - new Date(b.row.created_at).getTime() || a.row.seq - b.row.seq)
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
    const audit = targets.length === 0 ? [] : await this.audit(targets);
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
      ...(this.unanswered.size === 0 ? {} : { unanswered: [...this.unanswered.values()] }),
    };
  }

  private async audit(targets: string[]): Promise<AuditEntry[]> {
    const { entries, unanswered } = await listAudit(this.client, { targets, limit: AUDIT_ROWS_MAX });
    this.note(unanswered);
    return entries;
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

  /** Each event's webhook deliveries, from the webhooks service. */
  private async deliveries(eventIds: string[]): Promise<Map<string, Row[]>> {
    const out = new Map<string, Row[]>();
    if (eventIds.length === 0) return out;
    const { answers, unanswered } = await this.client.fanOut<FindDeliveriesReply>(ADMIN_FANOUT_OPERATIONS.findDeliveries, { event_ids: eventIds }, [
      "webhooks",
    ]);
    this.note(unanswered);
    for (const r of answers.flatMap((a) => a.body.deliveries)) out.set(String(r["event_id"]), [...(out.get(String(r["event_id"])) ?? []), r]);
    return out;
  }

  /** Which consumers (each service's inbox) processed each event, and when. */
  private async consumers(eventIds: string[]): Promise<Map<string, Row[]>> {
    const out = new Map<string, Row[]>();
    if (eventIds.length === 0) return out;
    const request: FindEventsRequest = { event_ids: [], ids: [], requests: [], consumed: eventIds };
    const { answers, unanswered } = await this.client.fanOut<FindEventsReply>(ADMIN_FANOUT_OPERATIONS.findEvents, request);
    this.note(unanswered);
    for (const { service, body } of answers)
      for (const c of body.consumed) out.set(c.event_id, [...(out.get(c.event_id) ?? []), { service, consumer: c.consumer, processed_at: c.processed_at }]);
    return out;
  }
}

/** Everything about `id` (see the module comment). `orgId` narrows client-chosen ids (participants, sale references). */
export async function find(client: AdminClient, id: string, opts: { orgId?: string | undefined } = {}): Promise<FindResult> {
  const query = id.trim();
  if (query === "" || query.length > 255) throw new Error("find needs an id of 1–255 characters");
  const kinds = classify(query);
  const scope = opts.orgId === undefined ? undefined : { orgId: opts.orgId };
  const seeds = kinds.map((kind) => ({ kind, id: kind === "uuid" ? query.toLowerCase() : query, scope }));
  const walk = new Walk(client);
  await walk.run(seeds);
  return walk.result(query, kinds);
}
