/**
 * The ledger's rows as `admin find` shows them (ADR 0016): accounts and a wallet's lists, transactions with their
 * reversals, entries and sales, holds, sales, participants, and transactions by the reference another service
 * posted with. Request hashes are left out (noise to an operator). Lookups by a column other than a table's key are
 * made within the org (and environment, when known) of the row that led to them, so they use the tables' indexes.
 */
import type { FindHit, FindScope } from "@treasury/contracts";
import { hitsOf } from "@treasury/service-kit";
import type { Fragment, Q } from "./db.ts";

/** Newest entries of a wallet shown when the wallet, or its participant, is asked for. */
export const LIST_LIMIT = 20;

const OMIT_HASH = ["request_hash"] as const;

export type Row = Record<string, unknown>;

/** An id within the org (and environment, when known) of the row or node that named it. */
export interface ScopedId {
  scope: FindScope;
  id: string;
}

/** A posting's idempotency key as another service chose it: (org, environment, kind, reference). */
export interface ReferenceKey {
  scope: FindScope;
  kind: string;
  reference: string;
}

/** Items by their org and environment, so each group is one indexed statement. */
function byScope<T extends { scope: FindScope }>(items: readonly T[]): { scope: FindScope; items: T[] }[] {
  const groups = new Map<string, { scope: FindScope; items: T[] }>();
  for (const it of items) {
    const key = `${it.scope.orgId}|${String(it.scope.livemode)}`;
    const g = groups.get(key) ?? { scope: it.scope, items: [] };
    g.items.push(it);
    groups.set(key, g);
  }
  return [...groups.values()];
}

function inScope(q: Q, scope: FindScope): Fragment {
  return q`org_id = ${scope.orgId} ${scope.livemode === undefined ? q`` : q`and livemode = ${scope.livemode}`}`;
}

/** Rows of a ledger table whose `column` is one of the ids, within each id's org and environment. */
async function scopedRows(q: Q, table: string, column: string, items: readonly ScopedId[], follow: boolean, omit: readonly string[] = []): Promise<FindHit[]> {
  const out: FindHit[] = [];
  for (const { scope, items: group } of byScope(items)) {
    const ids = [...new Set(group.map((i) => i.id))];
    const rows = await q<Row[]>`select * from ${q(table)} where ${inScope(q, scope)} and ${q(column)} = any(${ids}::text[])`;
    out.push(...hitsOf(table, rows, follow, omit));
  }
  return out;
}

/** Accounts by id (wallets and system accounts): context, never walked through. */
export async function accountsById(q: Q, ids: readonly string[]): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  return hitsOf("ledger.accounts", await q<Row[]>`select * from ledger.accounts where id = any(${[...ids]}::uuid[])`, false);
}

/** The participants owning these wallets (a wallet asked for). */
export async function walletOwners(q: Q, accounts: readonly Row[]): Promise<FindHit[]> {
  const owners = accounts
    .filter((a) => a["is_wallet"] === true && typeof a["participant_id"] === "string")
    .map((a) => ({ scope: { orgId: String(a["org_id"]), livemode: a["livemode"] as boolean }, id: String(a["participant_id"]) }));
  return scopedRows(q, "ledger.participants", "participant_id", owners, false, OMIT_HASH);
}

/** A wallet's active holds and its latest entries (LIST_LIMIT per wallet, newest first). */
export async function walletActivity(q: Q, accounts: readonly Row[]): Promise<FindHit[]> {
  const walletIds = accounts.filter((a) => a["is_wallet"] === true).map((a) => String(a["id"]));
  if (walletIds.length === 0) return [];
  const holds = await q<Row[]>`select * from ledger.holds where wallet_id = any(${walletIds}::uuid[]) and status = 'held'`;
  const entries = await entriesOf(
    q,
    q`unnest(${walletIds}::uuid[]) with ordinality as w(id, n)
      cross join lateral (select * from ledger.entries e where e.account_id = w.id order by e.seq desc limit ${LIST_LIMIT}) e`,
    q`order by w.n, e.seq desc`,
  );
  return [...hitsOf("ledger.holds", holds, false), ...entries];
}

/** Entries (`e` of `source`) with the account each moved (its type and owner): context, never walked through. */
async function entriesOf(q: Q, source: Fragment, tail: Fragment): Promise<FindHit[]> {
  const rows = await q<Row[]>`
    select e.id, e.transaction_id, e.seq, e.entry_type, e.amount, e.balance_after, e.created_at,
           e.account_id, a.account_type, a.participant_id, a.owner_id
      from ${source} join ledger.accounts a on a.id = e.account_id
     ${tail}`;
  return hitsOf("ledger.entries", rows, false);
}

/** Transactions by id, the reversals of them, their entries in posting order, and the sales they recorded. */
export async function transactionRows(q: Q, ids: readonly string[]): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  const list = [...ids];
  const [own, reversals, entries, sales] = await Promise.all([
    q<Row[]>`select * from ledger.transactions where id = any(${list}::text[])`,
    q<Row[]>`select * from ledger.transactions where reversal_of = any(${list}::text[])`,
    entriesOf(q, q`ledger.entries e`, q`where e.transaction_id = any(${list}::text[]) order by e.seq`),
    q<Row[]>`select * from ledger.sales where transaction_id = any(${list}::text[])`,
  ]);
  return [
    ...hitsOf("ledger.transactions", own, true, OMIT_HASH),
    ...hitsOf("ledger.transactions", reversals, true, OMIT_HASH),
    ...entries,
    ...hitsOf("ledger.sales", sales, true),
  ];
}

/** Holds by their id, or by the id of their release. */
export async function holdsBy(q: Q, column: "id" | "release_id", ids: readonly string[]): Promise<FindHit[]> {
  if (ids.length === 0) return [];
  return hitsOf("ledger.holds", await q<Row[]>`select * from ledger.holds where ${q(column)} = any(${[...ids]}::text[])`, true);
}

/** Sales by their reference (a client's, or `checkout:<session id>`). */
export function salesByReference(q: Q, items: readonly ScopedId[]): Promise<FindHit[]> {
  return scopedRows(q, "ledger.sales", "sale_reference", items, true);
}

/** Participants within an org (and environment), and, for ids without one, in every org. */
export async function participantRows(q: Q, scoped: readonly ScopedId[], unscoped: readonly string[]): Promise<FindHit[]> {
  const inOrgs = await scopedRows(q, "ledger.participants", "participant_id", scoped, false, OMIT_HASH);
  if (unscoped.length === 0) return inOrgs;
  const anywhere = await q<Row[]>`select * from ledger.participants where participant_id = any(${[...unscoped]}::text[])`;
  return [...inOrgs, ...hitsOf("ledger.participants", anywhere, false, OMIT_HASH)];
}

/** Transactions by the (kind, reference) a service posted with: found even before that service recorded their id. */
export async function transactionsByReference(q: Q, keys: readonly ReferenceKey[]): Promise<FindHit[]> {
  const out: FindHit[] = [];
  for (const { scope, items } of byScope(keys)) {
    const rows = await q<Row[]>`
      select t.* from ledger.transactions t
        join unnest(${items.map((k) => k.kind)}::text[], ${items.map((k) => k.reference)}::text[]) as k(kind, reference_id)
          using (kind, reference_id)
       where ${inScope(q, scope)}`;
    out.push(...hitsOf("ledger.transactions", rows, true, OMIT_HASH));
  }
  return out;
}
