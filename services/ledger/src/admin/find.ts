/**
 * What the ledger answers `admin find` (ADR 0016): the rows of its schema each id leads to (store/find.ts), read in
 * one read-only snapshot, and the ids other services answer for next: a transaction asked for without an org gets
 * the org and environment of its row (receipts and payments look it up within them), a participant asked for
 * itself leads to its lists (kyc's verifications, payouts' bank accounts and payouts).
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest, FindScope } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import type { Q, Sql } from "../store/db.ts";
import {
  accountsById,
  holdsBy,
  participantRows,
  salesByReference,
  transactionRows,
  transactionsByReference,
  walletActivity,
  walletOwners,
  type ReferenceKey,
  type Row,
  type ScopedId,
} from "../store/find.ts";

type Loader = (q: Q, nodes: readonly FindNode[], seed: boolean) => Promise<FindRowsReply>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const idsOf = (nodes: readonly FindNode[]): string[] => [...new Set(nodes.map((n) => n.id))];
const unscopedIds = (nodes: readonly FindNode[]): string[] => idsOf(nodes.filter((n) => n.scope === undefined));
/** A lookup by a column other than a table's key answers only nodes that carry their org (and environment). */
const scopedIds = (nodes: readonly FindNode[]): ScopedId[] => nodes.flatMap((n) => (n.scope === undefined ? [] : [{ scope: n.scope, id: n.id }]));
const scopeOfRow = (row: Row): FindScope => ({ orgId: String(row["org_id"]), livemode: row["livemode"] as boolean });
const rowsOf = (hits: readonly FindHit[]): Row[] => hits.map((h) => h.row);
const only = (hits: FindHit[]): FindRowsReply => ({ hits, nodes: [] });

/** A uuid is an account (checkout sessions are payments'); a wallet asked for shows its participant, holds and entries. */
async function uuids(q: Q, nodes: readonly FindNode[], seed: boolean): Promise<FindRowsReply> {
  const accounts = await accountsById(
    q,
    idsOf(nodes)
      .map((id) => id.toLowerCase())
      .filter((id) => UUID.test(id)),
  );
  if (!seed) return only(accounts);
  return only([...accounts, ...(await walletOwners(q, rowsOf(accounts))), ...(await walletActivity(q, rowsOf(accounts)))]);
}

async function transactions(q: Q, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const hits = await transactionRows(q, idsOf(nodes));
  const asked = new Set(unscopedIds(nodes));
  const scoped = new Map<string, FindNode>();
  for (const h of hits) {
    const id = String(h.row["id"]);
    if (h.table === "ledger.transactions" && asked.has(id)) scoped.set(id, { kind: "transaction", id, scope: scopeOfRow(h.row) });
  }
  return { hits, nodes: [...scoped.values()] };
}

/**
 * A participant id is the client's: the same one may exist in several orgs, so without an org it is looked up in
 * every org. Asked for itself: its wallet with the wallet's holds and entries, and its lists in other services.
 */
async function participants(q: Q, nodes: readonly FindNode[], seed: boolean): Promise<FindRowsReply> {
  const found = await participantRows(q, scopedIds(nodes), unscopedIds(nodes));
  if (!seed) return only(found);
  const wallets = await accountsById(q, [...new Set(found.map((h) => String(h.row["wallet_id"])))]);
  const lists = found.map((h): FindNode => ({ kind: "participant_lists", id: String(h.row["participant_id"]), scope: scopeOfRow(h.row) }));
  return { hits: [...found, ...wallets, ...(await walletActivity(q, rowsOf(wallets)))], nodes: lists };
}

/** `<kind>|<reference>` (the reference may hold `|` itself): a posting another service made, by its idempotency key. */
async function references(q: Q, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const keys = nodes.flatMap((n): ReferenceKey[] => {
    const at = n.id.indexOf("|");
    return n.scope === undefined || at < 0 ? [] : [{ scope: n.scope, kind: n.id.slice(0, at), reference: n.id.slice(at + 1) }];
  });
  return only(await transactionsByReference(q, keys));
}

const LOADERS: ReadonlyMap<string, Loader> = new Map<string, Loader>([
  ["uuid", uuids],
  ["transaction", transactions],
  ["hold", async (q, nodes) => only(await holdsBy(q, "id", idsOf(nodes)))],
  ["release", async (q, nodes) => only(await holdsBy(q, "release_id", idsOf(nodes)))],
  ["sale", async (q, nodes) => only(await salesByReference(q, scopedIds(nodes)))],
  ["participant", participants],
  ["ledger_reference", references],
]);

/** Each kind's nodes go to its loader; kinds the ledger holds no rows for are left to the other services. */
export async function findRows(q: Q, request: FindRowsRequest): Promise<FindRowsReply> {
  const byKind = new Map<string, FindNode[]>();
  for (const n of request.nodes) byKind.set(n.kind, [...(byKind.get(n.kind) ?? []), n]);
  const reply: FindRowsReply = { hits: [], nodes: [] };
  for (const [kind, nodes] of byKind) {
    const loader = LOADERS.get(kind);
    if (loader === undefined) continue;
    const found = await loader(q, nodes, request.seed);
    reply.hits.push(...found.hits);
    reply.nodes.push(...found.nodes);
  }
  return reply;
}

export function registerAdminFind(svc: Pick<Service, "adminFind">, sql: Sql): void {
  svc.adminFind({ rows: (request) => sql.begin("read only isolation level repeatable read", (tx) => findRows(tx, request)) });
}
