/**
 * Set-based statements of the group-commit path (usecases/batch.ts): one statement per step for a whole batch
 * of postings, whatever its size, instead of one per posting.
 */
import { eventSubject, type EventType } from "@treasury/contracts";
import { markOutboxWritten } from "@treasury/service-kit";
import type { Side, WalletType } from "../domain/accounts.ts";
import { money, type Q } from "./db.ts";
import type { NewTransaction } from "./transactions.ts";

/**
 * postgres.js sends a JS array of booleans or numbers as one scalar parameter; as text[] (cast in SQL) every
 * element type arrives intact.
 */
function txt(values: readonly (string | number | boolean | null)[]): (string | null)[] {
  return values.map((v) => (v === null ? null : typeof v === "boolean" ? (v ? "t" : "f") : String(v)));
}

/** A transaction to claim in a batch: a NewTransaction with its scope (batches span orgs). */
export interface ClaimRow extends NewTransaction {
  orgId: string;
  livemode: boolean;
}


/**
 * Transactions already holding these keys. One query per (org, env, kind), typically one per batch, each an
 * index probe per reference on transactions_reference_uq (a join against unnest() was planned as a scan).
 */
export async function existingClaims(q: Q, keys: readonly { orgId: string; livemode: boolean; kind: string; referenceId: string }[]) {
  const groups = new Map<string, { orgId: string; livemode: boolean; kind: string; refs: string[] }>();
  for (const k of keys) {
    const g = `${k.orgId}\u0000${k.livemode}\u0000${k.kind}`;
    const group = groups.get(g) ?? { orgId: k.orgId, livemode: k.livemode, kind: k.kind, refs: [] };
    group.refs.push(k.referenceId);
    groups.set(g, group);
  }
  const out: { id: string; org_id: string; livemode: boolean; kind: string; reference_id: string; request_hash: string; result: Record<string, unknown> }[] = [];
  for (const g of groups.values()) {
    out.push(
      ...(await q<typeof out>`
        select id, org_id, livemode, kind, reference_id, request_hash, result from ledger.transactions
        where org_id = ${g.orgId} and livemode = ${g.livemode} and kind = ${g.kind} and reference_id = any(${g.refs}::text[])`),
    );
  }
  return out;
}

export async function participantWallets(q: Q, keys: readonly { orgId: string; livemode: boolean; participantId: string }[]) {
  if (keys.length === 0) return [];
  return q<{ org_id: string; livemode: boolean; participant_id: string; wallet_id: string }[]>`
    select p.org_id, p.livemode, p.participant_id, p.wallet_id
    from ledger.participants p
    join unnest(${keys.map((k) => k.orgId)}::text[], ${txt(keys.map((k) => k.livemode))}::text[]::boolean[], ${keys.map((k) => k.participantId)}::text[])
      as v(org_id, livemode, participant_id)
      on p.org_id = v.org_id and p.livemode = v.livemode and p.participant_id = v.participant_id`;
}

export interface LockedWallet {
  id: string;
  org_id: string;
  livemode: boolean;
  account_type: WalletType;
  normal_side: Side;
  participant_id: string | null;
  status: string;
  balance: number;
  held_amount: number;
}

export type ExistingClaim = { id: string; org_id: string; livemode: boolean; kind: string; reference_id: string; request_hash: string; result: Record<string, unknown> };

/**
 * One round trip for the two reads that open a batch: the transactions already holding the batch's keys
 * (one (org, env, kind) group, the common case; other batches call existingClaims) and the batch's wallets,
 * locked in ascending id order.
 */
export async function claimsAndLocks(
  q: Q,
  group: { orgId: string; livemode: boolean; kind: string; refs: readonly string[] },
  walletIds: readonly string[],
): Promise<{ existing: ExistingClaim[]; wallets: LockedWallet[] }> {
  const [row] = await q<{ t: ExistingClaim[] | null; w: (Omit<LockedWallet, "balance" | "held_amount"> & { balance: number | string; held_amount: number | string })[] | null }[]>`
    with w as (
      select id, org_id, livemode, account_type, normal_side, participant_id, status, balance::text as balance, held_amount::text as held_amount
      from ledger.accounts where id = any(${[...walletIds]}::uuid[]) and is_wallet
      order by id for update
    ), t as (
      select id, org_id, livemode, kind, reference_id, request_hash, result from ledger.transactions
      where org_id = ${group.orgId} and livemode = ${group.livemode} and kind = ${group.kind} and reference_id = any(${[...group.refs]}::text[])
    )
    select (select json_agg(t) from t) as t, (select json_agg(w order by w.id) from w) as w`;
  return {
    existing: row?.t ?? [],
    wallets: (row?.w ?? []).map((r) => ({ ...r, balance: money(String(r.balance)), held_amount: money(String(r.held_amount)) })),
  };
}

/** Locks every wallet of the batch in one statement, in ascending id order (the lock order everywhere). */
export async function lockWalletsAnyScope(q: Q, ids: readonly string[]): Promise<LockedWallet[]> {
  if (ids.length === 0) return [];
  const rows = await q<(Omit<LockedWallet, "balance" | "held_amount"> & { balance: string; held_amount: string })[]>`
    select id, org_id, livemode, account_type, normal_side, participant_id, status, balance, held_amount
    from ledger.accounts where id = any(${[...ids]}::uuid[]) and is_wallet
    order by id for update`;
  return rows.map((r) => ({ ...r, balance: money(r.balance), held_amount: money(r.held_amount) }));
}

/** Outstanding creator_receivable per (org, env, participant) for the given creators. */
export async function receivables(q: Q, keys: readonly { orgId: string; livemode: boolean; participantId: string }[]) {
  if (keys.length === 0) return [];
  const rows = await q<{ org_id: string; livemode: boolean; entity_id: string; id: string; outstanding: string }[]>`
    select a.org_id, a.livemode, a.entity_id, a.id, coalesce(sum(sh.balance), 0)::bigint as outstanding
    from ledger.accounts a
    join unnest(${keys.map((k) => k.orgId)}::text[], ${txt(keys.map((k) => k.livemode))}::text[]::boolean[], ${keys.map((k) => k.participantId)}::text[])
      as v(org_id, livemode, entity_id)
      on a.org_id = v.org_id and a.livemode = v.livemode and a.entity_id = v.entity_id and a.account_type = 'creator_receivable' and not a.is_wallet
    join ledger.account_balance_shards sh on sh.account_id = a.id
    group by a.org_id, a.livemode, a.entity_id, a.id`;
  return rows.map((r) => ({ ...r, outstanding: money(r.outstanding) }));
}

export interface BatchEntry {
  id: string;
  orgId: string;
  livemode: boolean;
  transactionId: string;
  accountId: string;
  entryType: Side;
  amount: number;
  balanceAfter: number | null;
}






export interface BatchEvent {
  id: string;
  orgId: string;
  livemode: boolean;
  type: EventType;
  data: Record<string, unknown>;
  headers: Record<string, string>;
}


export interface BatchWrite {
  transactions: readonly (ClaimRow & { result: Record<string, unknown> })[];
  entries: readonly BatchEntry[];
  wallets: readonly { id: string; balance: number; held: number }[];
  /** (account, shard, delta): a batch's shards never overlap another in-flight batch's (see batch.ts). */
  shards: readonly { accountId: string; shard: number; delta: number }[];
  events: readonly BatchEvent[];
}

/**
 * Every write of a batch in ONE statement (data-modifying CTEs): the transactions with their results, the
 * entries, the wallets' new balances, the shard deltas and the outbox rows (no NOTIFY: notifying commits
 * serialise under one lock; withTx wakes the local relay after COMMIT, ADR 0003). A reference
 * claimed meanwhile by another transaction fails the statement (unique violation) and the batch is re-run.
 */
export async function writeBatch(q: Q, w: BatchWrite): Promise<void> {
  const t = w.transactions;
  const e = w.entries;
  const ev = w.events;
  await q`
    with tx as (
      insert into ledger.transactions (id, org_id, livemode, kind, reference_id, request_hash, amount, description, metadata, result)
      select id, org_id, livemode, kind, reference_id, request_hash, amount, description, metadata::jsonb, result::jsonb
      from unnest(${t.map((r) => r.id)}::text[], ${t.map((r) => r.orgId)}::text[], ${txt(t.map((r) => r.livemode))}::text[]::boolean[],
        ${t.map((r) => r.kind)}::text[], ${t.map((r) => r.referenceId)}::text[], ${t.map((r) => r.requestHash)}::text[],
        ${txt(t.map((r) => r.amount))}::text[]::bigint[], ${t.map((r) => r.description)}::text[], ${t.map((r) => JSON.stringify(r.metadata))}::text[],
        ${t.map((r) => JSON.stringify(r.result))}::text[])
        as v(id, org_id, livemode, kind, reference_id, request_hash, amount, description, metadata, result)
      returning 1
    ), en as (
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount, balance_after)
      select * from unnest(${e.map((r) => r.id)}::text[], ${e.map((r) => r.orgId)}::text[], ${txt(e.map((r) => r.livemode))}::text[]::boolean[],
        ${e.map((r) => r.transactionId)}::text[], ${e.map((r) => r.accountId)}::uuid[], ${e.map((r) => r.entryType)}::text[],
        ${txt(e.map((r) => r.amount))}::text[]::bigint[], ${txt(e.map((r) => r.balanceAfter))}::text[]::bigint[])
      returning 1
    ), wa as (
      update ledger.accounts a set balance = v.balance, held_amount = v.held
      from unnest(${w.wallets.map((r) => r.id)}::uuid[], ${txt(w.wallets.map((r) => r.balance))}::text[]::bigint[], ${txt(w.wallets.map((r) => r.held))}::text[]::bigint[]) as v(id, balance, held)
      where a.id = v.id and a.is_wallet
      returning 1
    ), sh as (
      update ledger.account_balance_shards s set balance = s.balance + v.delta
      from unnest(${w.shards.map((r) => r.accountId)}::uuid[], ${txt(w.shards.map((r) => r.shard))}::text[]::int2[], ${txt(w.shards.map((r) => r.delta))}::text[]::bigint[]) as v(account_id, shard, delta)
      where s.account_id = v.account_id and s.shard = v.shard
      returning 1
    ), ob as (
      insert into ledger.outbox (id, org_id, livemode, type, subject, payload, headers)
      select id, org_id, livemode, type, subject, payload::jsonb, headers::jsonb
      from unnest(${ev.map((r) => r.id)}::text[], ${ev.map((r) => r.orgId)}::text[], ${txt(ev.map((r) => r.livemode))}::text[]::boolean[],
        ${ev.map((r) => r.type)}::text[], ${ev.map((r) => eventSubject("", r.type))}::text[],
        ${ev.map((r) => JSON.stringify({ data: r.data }))}::text[], ${ev.map((r) => JSON.stringify(r.headers))}::text[])
        as v(id, org_id, livemode, type, subject, payload, headers)
      returning 1
    )
    select (select count(*) from tx) as transactions, (select count(*) from en) as entries, (select count(*) from wa) as wallets,
      (select count(*) from sh) as shards, (select count(*) from ob) as events`.then((rows) => {
    const r = rows[0] as Record<string, string> | undefined;
    const counts = [Number(r?.["transactions"]), Number(r?.["entries"]), Number(r?.["wallets"]), Number(r?.["shards"]), Number(r?.["events"])];
    const want = [t.length, e.length, w.wallets.length, w.shards.length, ev.length];
    if (counts.some((c, i) => c !== want[i])) throw new Error(`batch write counts ${counts.join("/")} != ${want.join("/")}`);
  });
  if (ev.length > 0) markOutboxWritten(q, "ledger");
}
