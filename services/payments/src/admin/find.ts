/**
 * What payments holds for the operator's `admin find` (ADR 0016): checkout sessions with their disputes and the
 * sale's ledger reference, wallet sessions and top-ups, shared-wallet spends and their reversals, card refunds,
 * and the card processor's ids and events. Stored request hashes and first answers are left out. Lookups by a column
 * other than a table's key are made only for ids that come with the org and environment of the row that named
 * them, so they use the tables' indexes (every unique key starts with org_id, livemode).
 */
import type postgres from "postgres";
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest, FindScope } from "@treasury/contracts";
import { FIND_EVENTS_MAX, hitsOf, scopedIds, type AdminFinder } from "@treasury/service-kit";
import type { Sql } from "../store/db.ts";
import { SALE_KIND } from "../usecases/complete-checkout.ts";
import { saleReferenceOf } from "../usecases/present.ts";

type Row = Record<string, unknown>;
type Where = postgres.PendingQuery<postgres.Row[]>;

/** Columns never shown: the stored request hashes and first answers of idempotent creates. */
const OMIT: Record<string, readonly string[]> = {
  "payments.checkout_sessions": ["request_hash", "create_response"],
  "payments.wallet_sessions": ["request_hash", "create_response"],
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const idsOf = (nodes: readonly FindNode[]): string[] => [...new Set(nodes.map((n) => n.id))];

/** A row's own org and environment. */
const scopeOfRow = (r: Row): FindScope => ({ orgId: String(r["org_id"]), livemode: r["livemode"] as boolean });

class Reader {
  constructor(readonly sql: Sql) {}

  async select(table: string, where: Where, follow: boolean): Promise<FindHit[]> {
    const rows = await this.sql`select * from ${this.sql(table)} where ${where}`;
    return hitsOf(table, rows, follow, OMIT[table]);
  }

  /** Rows whose `column` is a scoped node's id, within that node's org (and environment, when known). */
  async scoped(table: string, column: string, nodes: readonly FindNode[], follow: boolean): Promise<FindHit[]> {
    const out: FindHit[] = [];
    for (const { scope, ids } of scopedIds(nodes)) {
      const env = scope.livemode === undefined ? this.sql`` : this.sql`and livemode = ${scope.livemode}`;
      out.push(...(await this.select(table, this.sql`org_id = ${scope.orgId} ${env} and ${this.sql(column)} = any(${ids}::text[])`, follow)));
    }
    return out;
  }

  /** Rows whose `column` is one of the nodes' ids, whose ids are part of the path. */
  by(table: string, nodes: readonly FindNode[], column = "id"): Promise<FindHit[]> {
    return this.select(table, this.sql`${this.sql(column)} = any(${idsOf(nodes)}::text[])`, true);
  }
}

/**
 * An id asked for without an org, found in the table it is the key of: the same id with the row's org and
 * environment, so the services holding rows by it in another column answer for it too.
 */
function scopedAgain(nodes: readonly FindNode[], hits: readonly FindHit[]): FindNode[] {
  const unscoped = nodes.filter((n) => n.scope === undefined);
  return hits.flatMap((h) => unscoped.filter((n) => n.id === String(h.row["id"])).map((n) => ({ kind: n.kind, id: n.id, scope: scopeOfRow(h.row) })));
}

/** A UUID may be a checkout session: the session, its disputes, and its sale in the ledger by its reference. */
async function checkouts(r: Reader, asked: readonly FindNode[]): Promise<FindRowsReply> {
  const nodes = asked.map((n) => ({ ...n, id: n.id.toLowerCase() })).filter((n) => UUID.test(n.id));
  if (nodes.length === 0) return { hits: [], nodes: [] };
  const sessions = await r.select("payments.checkout_sessions", r.sql`id = any(${idsOf(nodes)}::uuid[])`, true);
  if (sessions.length === 0) return { hits: [], nodes: [] };
  const sessionIds = sessions.map((h) => String(h.row["id"]));
  const disputes = await r.select("payments.disputes", r.sql`checkout_session_id = any(${sessionIds}::uuid[])`, true);
  // The sale's ledger transaction is found by its deterministic reference: present even while the session is `completing`.
  const sales = sessions.map((h) => ({
    kind: "ledger_reference",
    id: `${SALE_KIND}|${String(h.row["ledger_reference"] ?? saleReferenceOf({ id: String(h.row["id"]) }))}`,
    scope: scopeOfRow(h.row),
  }));
  return { hits: [...sessions, ...disputes], nodes: [...sales, ...scopedAgain(nodes, sessions)] };
}

/** Rows by their own key, with the scoped ids they make known. */
async function owned(r: Reader, table: string, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const hits = await r.by(table, nodes);
  return { hits, nodes: scopedAgain(nodes, hits) };
}

/** The rows that hold a card processor's id: the checkout or top-up it paid, its refund, dispute or event. */
async function processorIds(r: Reader, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const list = idsOf(nodes);
  const q = r.sql;
  const hits = [
    ...(await r.select(
      "payments.checkout_sessions",
      q`payment_id = any(${list}::text[]) or processor_payment_intent = any(${list}::text[]) or processor_charge = any(${list}::text[])`,
      true,
    )),
    ...(await r.select("payments.wallet_topups", q`processor_session_id = any(${list}::text[]) or processor_payment_intent = any(${list}::text[])`, true)),
    ...(await r.select("payments.processor_refunds", q`processor_refund_id = any(${list}::text[])`, true)),
    ...(await r.select("payments.disputes", q`processor_dispute_id = any(${list}::text[])`, true)),
    ...(await r.select("payments.processor_events", q`event_id = any(${list}::text[])`, true)),
  ];
  return { hits, nodes: [] };
}

const only = async (hits: Promise<FindHit[]>): Promise<FindRowsReply> => ({ hits: await hits, nodes: [] });

type Loader = (r: Reader, nodes: readonly FindNode[]) => Promise<FindRowsReply>;

/** What each kind of id leads to here (its kind from its form, or from the column that held it). */
const LOADERS: ReadonlyMap<string, Loader> = new Map(
  Object.entries({
    uuid: checkouts,
    transaction: (r, nodes) => only(r.scoped("payments.shared_spends", "transaction_id", nodes, true)),
    refund: (r, nodes) => only(r.scoped("payments.processor_refunds", "refund_id", nodes, true)),
    request: (r, nodes) => only(r.by("payments.shared_spend_reversals", nodes, "request_id")),
    dispute: (r, nodes) => owned(r, "payments.disputes", nodes),
    wallet_session: (r, nodes) => owned(r, "payments.wallet_sessions", nodes),
    wallet_topup: (r, nodes) => owned(r, "payments.wallet_topups", nodes),
    processor: processorIds,
  } satisfies Record<string, Loader>),
);

async function rows(sql: Sql, request: FindRowsRequest): Promise<FindRowsReply> {
  const byKind = new Map<string, FindNode[]>();
  for (const n of request.nodes) byKind.set(n.kind, [...(byKind.get(n.kind) ?? []), n]);
  const r = new Reader(sql);
  const out: FindRowsReply = { hits: [], nodes: [] };
  for (const [kind, nodes] of byKind) {
    const load = LOADERS.get(kind);
    if (load === undefined) continue;
    const found = await load(r, nodes);
    out.hits.push(...found.hits);
    out.nodes.push(...found.nodes);
  }
  return out;
}

/**
 * The card processor's events as payments received them, found by our ids in their payload (the processor echoes
 * the checkout's and refund's ids in its metadata): whether the processor's word arrived, and what working on it
 * answered. The payload itself (the buyer's card and billing details) is not shown.
 */
async function processorEventsNaming(sql: Sql, ids: readonly string[]): Promise<FindHit[]> {
  const found = await sql`
    select provider, event_id as id, type, livemode, status, outcome, attempts, last_error, next_attempt_at, locked_until, received_at, processed_at
      from payments.processor_events p
     where exists (select 1 from jsonb_path_query(p.payload, 'strict $.**') v
                    where jsonb_typeof(v) = 'string' and v #>> '{}' = any(${[...ids]}::text[]))
     order by received_at desc limit ${FIND_EVENTS_MAX}`;
  return hitsOf("payments.processor_events", found, false);
}

/** The finder of `admin find` over payments' own schema. */
export function pgFinder(sql: Sql): AdminFinder {
  return { rows: (request) => rows(sql, request), mentions: (ids) => processorEventsNaming(sql, ids) };
}
