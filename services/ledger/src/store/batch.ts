/**
 * Set-based statements of the posting transaction (usecases/commit.ts): one statement per step for a whole batch
 * of postings, whatever its size, instead of one per posting. A single post is a batch of one.
 */
import { eventSubject, type Cents, type EventType } from "@treasury/contracts";
import type { Side, WalletType } from "../domain/accounts.ts";
import { money, type Q } from "./db.ts";
import type { JSONValue } from "postgres";
import type { NewHold } from "./holds.ts";
import type { NewSale } from "./sales.ts";
import type { NewTransaction } from "./transactions.ts";

/**
 * postgres.js sends a JS array of booleans or numbers as one scalar parameter; as text[] (cast in SQL) every
 * element type arrives intact.
 */
function txt(values: readonly (string | number | boolean | null)[]): (string | null)[] {
  return values.map((v) => (v === null ? null : typeof v === "boolean" ? (v ? "t" : "f") : String(v)));
}

/*
 * Array literals built here rather than by postgres.js (which escapes every element with two regular
 * expressions): the batch write sends about twenty array elements per posting. A string passes through
 * postgres.js's array serializer unchanged and PostgreSQL parses it as the array type the SQL casts it to.
 */

/** `{a,b}`: only for values that never need quoting (ids and uuids this service made or read, numbers). */
function plain(values: readonly (string | number)[]): string {
  return `{${values.join(",")}}`;
}

/** `{t,f}` for booleans. */
function bools(values: readonly boolean[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) out += i === 0 ? (values[i] ? "t" : "f") : values[i] ? ",t" : ",f";
  return `${out}}`;
}

/** `{NULL,5}` for nullable integers. */
function ints(values: readonly (number | null)[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i];
    out += v === null || v === undefined ? "NULL" : String(v);
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /[\\"]/;
const ESCAPE = /[\\"]/g;

/** Any text (client-supplied too): every element quoted, backslashes and quotes escaped; null is NULL. */
function quoted(values: readonly (string | null)[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i];
    if (v === null || v === undefined) out += "NULL";
    else out += NEEDS_ESCAPE.test(v) ? `"${v.replace(ESCAPE, "\\$&")}"` : `"${v}"`;
  }
  return `${out}}`;
}

/** A transaction to claim in a batch: a NewTransaction with its scope (batches span orgs). */
export interface ClaimRow extends Omit<NewTransaction, "effectiveAt"> {
  orgId: string;
  livemode: boolean;
  /** ISO 8601, or null: the moment of posting. */
  effectiveAt: string | null;
  /** Already inserted at the start of the transaction (a claim taken first): the write stores its result. */
  claimed: boolean;
}

/**
 * Transactions already holding these keys: one probe of transactions_reference_uq per key. A lateral subquery
 * per key, because `reference_id = any(...)` and joins against unnest() were planned (with the statistics of
 * a young table, and then kept as the cached generic plan) as a scan of every transaction of the kind, which
 * grew with the table and cost more than the rest of the batch. The batch path runs this only after a
 * reference was found already claimed (see usecases/batch.ts); otherwise the unique index decides.
 */
export async function claimsByKey(q: Q, keys: readonly { orgId: string; livemode: boolean; kind: string; referenceId: string }[]): Promise<ExistingClaim[]> {
  if (keys.length === 0) return [];
  return q<ExistingClaim[]>`
    select t.id, t.org_id, t.livemode, t.kind, t.reference_id, t.request_hash, t.result
    from unnest(${keys.map((k) => k.orgId)}::text[], ${txt(keys.map((k) => k.livemode))}::text[]::boolean[], ${keys.map((k) => k.kind)}::text[],
      ${keys.map((k) => k.referenceId)}::text[]) as k(org_id, livemode, kind, reference_id)
    cross join lateral (
      select id, org_id, livemode, kind, reference_id, request_hash, result from ledger.transactions x
      where x.org_id = k.org_id and x.livemode = k.livemode and x.kind = k.kind and x.reference_id = k.reference_id
      limit 1) t`.execute();
}

export async function participantWallets(q: Q, keys: readonly { orgId: string; livemode: boolean; participantId: string }[]) {
  if (keys.length === 0) return [];
  return q<{ org_id: string; livemode: boolean; participant_id: string; wallet_id: string }[]>`
    select p.org_id, p.livemode, p.participant_id, p.wallet_id
    from ledger.participants p
    join unnest(${keys.map((k) => k.orgId)}::text[], ${txt(keys.map((k) => k.livemode))}::text[]::boolean[], ${keys.map((k) => k.participantId)}::text[])
      as v(org_id, livemode, participant_id)
      on p.org_id = v.org_id and p.livemode = v.livemode and p.participant_id = v.participant_id`.execute();
}

export interface LockedWallet {
  id: string;
  org_id: string;
  livemode: boolean;
  account_type: WalletType;
  normal_side: Side;
  participant_id: string | null;
  status: string;
  balance: Cents;
  held_amount: Cents;
  /** The row version (its xmin): the batch write only applies if the row is still this version. */
  xmin: string;
}

export type ExistingClaim = {
  id: string;
  org_id: string;
  livemode: boolean;
  kind: string;
  reference_id: string;
  request_hash: string;
  result: Record<string, unknown>;
};

/**
 * Locks every wallet of the batch in one statement, in ascending id order (the lock order everywhere): the
 * wallets named by id and the creator wallets of the participants named, so one statement (pipelined with
 * the participant lookup) does what a lookup round trip and then a lock round trip did.
 */
export async function lockWalletsAnyScope(
  q: Q,
  ids: readonly string[],
  participants: readonly { orgId: string; livemode: boolean; participantId: string }[] = [],
): Promise<LockedWallet[]> {
  if (ids.length === 0 && participants.length === 0) return [];
  const byParticipant =
    participants.length === 0
      ? q``
      : q`or id in (
        select p.wallet_id from ledger.participants p
        join unnest(${quoted(participants.map((k) => k.orgId))}::text[], ${bools(participants.map((k) => k.livemode))}::boolean[], ${quoted(participants.map((k) => k.participantId))}::text[])
          as v(org_id, livemode, participant_id)
          on p.org_id = v.org_id and p.livemode = v.livemode and p.participant_id = v.participant_id)`;
  const rows = await q<(Omit<LockedWallet, "balance" | "held_amount"> & { balance: string; held_amount: string })[]>`
    select id, org_id, livemode, account_type, normal_side, participant_id, status, balance, held_amount, xmin::text as xmin
    from ledger.accounts where (id = any(${quoted(ids)}::uuid[]) ${byParticipant}) and is_wallet
    order by id for update`;
  return rows.map((r) => ({ ...r, balance: money(r.balance), held_amount: money(r.held_amount) }));
}

/** A sale's remainder as a batch reads it, locked (refunds of the batch change it). */
export interface LockedSale {
  org_id: string;
  livemode: boolean;
  sale_reference: string;
  gross: Cents;
  creator_amount: Cents;
  sales_tax: Cents;
  refunded_amount: Cents;
  creator_refunded: Cents;
  platform_refunded: Cents;
  reversed: boolean;
}

/**
 * Locks the sales the batch refunds, in key order (sales before wallets before holds: the lock order of every
 * transaction that changes a sale's remainder).
 */
export async function lockSalesAnyScope(q: Q, keys: readonly { orgId: string; livemode: boolean; saleReference: string }[]): Promise<LockedSale[]> {
  if (keys.length === 0) return [];
  const rows = await q<Record<keyof LockedSale, string | boolean>[]>`
    select s.org_id, s.livemode, s.sale_reference, s.gross, s.creator_amount, s.sales_tax, s.refunded_amount, s.creator_refunded,
      s.platform_refunded, s.reversed
    from ledger.sales s
    join unnest(${quoted(keys.map((k) => k.orgId))}::text[], ${bools(keys.map((k) => k.livemode))}::boolean[], ${quoted(keys.map((k) => k.saleReference))}::text[])
      as v(org_id, livemode, sale_reference)
      on s.org_id = v.org_id and s.livemode = v.livemode and s.sale_reference = v.sale_reference
    order by s.org_id, s.livemode, s.sale_reference
    for update of s`;
  return rows.map((r) => ({
    org_id: String(r.org_id),
    livemode: r.livemode === true,
    sale_reference: String(r.sale_reference),
    gross: money(String(r.gross)),
    creator_amount: money(String(r.creator_amount)),
    sales_tax: money(String(r.sales_tax)),
    refunded_amount: money(String(r.refunded_amount)),
    creator_refunded: money(String(r.creator_refunded)),
    platform_refunded: money(String(r.platform_refunded)),
    reversed: r.reversed === true,
  }));
}

/** Locks holds by id, whatever their org (after the wallets: the lock order). */
export async function lockHoldsAnyScope(q: Q, ids: readonly string[]) {
  if (ids.length === 0) return [];
  const rows = await q<
    { id: string; wallet_id: string; participant_id: string | null; amount: string; status: "held" | "released"; release_id: string | null }[]
  >`
    select id, wallet_id, participant_id, amount, status, release_id from ledger.holds where id = any(${quoted(ids)}::text[]) order by id for update`;
  return rows.map((r) => ({ ...r, amount: money(r.amount) }));
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
  /**
   * Wallet rows to write, each guarded by the row version the batch computed from (`xmin`): a row that changed
   * meanwhile is not written, and the statement then fails (see usecases/batch.ts, cached wallets).
   */
  wallets: readonly { id: string; balance: number; held: number; xmin: string }[];
  /** (account, shard, delta): a batch's shards never overlap another in-flight batch's (see batch.ts). */
  shards: readonly { accountId: string; shard: number; delta: number }[];
  events: readonly BatchEvent[];
  /** Holds the batch's requests create (their wallets' held_amount is in `wallets`). */
  holds: readonly BatchHold[];
  /** Sales the batch's requests record (a sale reference already taken fails the statement: sales_pkey). */
  sales: readonly BatchSale[];
  /** Holds released (each must still be held: its wallet's held_amount is in `wallets`). */
  releases: readonly BatchRelease[];
  /** Holds used in part (each must still be held, and larger than the part). */
  reductions: readonly { holdId: string; by: number }[];
  /** Sales' remainders after the batch's refunds (refunded = creator + platform, checked by the table). */
  saleUpdates: readonly { orgId: string; livemode: boolean; saleReference: string; refunded: number; creatorRefunded: number; platformRefunded: number }[];
}

export interface BatchRelease {
  holdId: string;
  releaseId: string;
  transactionId: string;
  transferExecuted: boolean;
}

/** A hold the batch creates: a NewHold with its scope (batches span orgs). */
export interface BatchHold extends Omit<NewHold, "holdUntil"> {
  orgId: string;
  livemode: boolean;
  /** ISO 8601, or null: ready for release at once. */
  holdUntil: string | null;
}

/** A sale the batch records: a NewSale with its scope. */
export interface BatchSale extends NewSale {
  orgId: string;
  livemode: boolean;
}

/**
 * Every write of a batch in ONE statement (data-modifying CTEs): the transactions with their results, the
 * entries, the wallets' new balances, the shard deltas, the holds and sales created, and the outbox rows (no NOTIFY: notifying commits
 * serialise under one lock; the relay's short poll finds the rows, ADR 0003). A reference already claimed,
 * committed or by a concurrent transaction, fails the statement (unique violation on transactions_reference_uq)
 * and the batch is re-run after reading the claims. The statement is sent at once (`execute`), so the caller
 * can pipeline COMMIT right behind it. Answers the row version (xmin) the written wallets now have.
 */
export function writeBatch(q: Q, w: BatchWrite): Promise<string | null> {
  const e = w.entries;
  const ev = w.events;
  const wa = w.wallets;
  const sh = w.shards;
  const ho = w.holds;
  const sa = w.sales;
  const ti = w.transactions.filter((r) => !r.claimed);
  const tu = w.transactions.filter((r) => r.claimed);
  const re = w.releases;
  const rd = w.reductions;
  const su = w.saleUpdates;
  return q`
    with tx as (
      insert into ledger.transactions (id, org_id, livemode, kind, reference_id, request_hash, amount, description, effective_at, metadata, result)
      select v.id, v.org_id, v.livemode, v.kind, v.reference_id, v.request_hash, v.amount, v.description, v.effective_at, j.doc -> 0, j.doc -> 1
      from unnest(${plain(ti.map((r) => r.id))}::text[], ${quoted(ti.map((r) => r.orgId))}::text[], ${bools(ti.map((r) => r.livemode))}::boolean[],
        ${quoted(ti.map((r) => r.kind))}::text[], ${quoted(ti.map((r) => r.referenceId))}::text[], ${plain(ti.map((r) => r.requestHash))}::text[],
        ${plain(ti.map((r) => r.amount))}::bigint[], ${quoted(ti.map((r) => r.description))}::text[], ${quoted(ti.map((r) => r.effectiveAt))}::timestamptz[])
        with ordinality as v(id, org_id, livemode, kind, reference_id, request_hash, amount, description, effective_at, n)
      join jsonb_array_elements(${q.json(ti.map((r) => [r.metadata, r.result]) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      returning 1
    ), tu as (
      update ledger.transactions x set amount = v.amount, result = j.doc
      from unnest(${plain(tu.map((r) => r.id))}::text[], ${plain(tu.map((r) => r.amount))}::bigint[]) with ordinality as v(id, amount, n)
      join jsonb_array_elements(${q.json(tu.map((r) => r.result) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      where x.id = v.id
      returning 1
    ), re as (
      update ledger.holds h set status = 'released', release_id = v.release_id, released_at = now(),
        release_transaction_id = v.transaction_id, release_transfer_executed = v.executed
      from unnest(${quoted(re.map((r) => r.holdId))}::text[], ${plain(re.map((r) => r.releaseId))}::text[], ${plain(re.map((r) => r.transactionId))}::text[],
        ${bools(re.map((r) => r.transferExecuted))}::boolean[]) as v(id, release_id, transaction_id, executed)
      where h.id = v.id and h.status = 'held'
      returning 1
    ), su as (
      update ledger.sales x set refunded_amount = v.refunded, creator_refunded = v.creator_refunded, platform_refunded = v.platform_refunded
      from unnest(${quoted(su.map((r) => r.orgId))}::text[], ${bools(su.map((r) => r.livemode))}::boolean[], ${quoted(su.map((r) => r.saleReference))}::text[],
        ${plain(su.map((r) => r.refunded))}::bigint[], ${plain(su.map((r) => r.creatorRefunded))}::bigint[], ${plain(su.map((r) => r.platformRefunded))}::bigint[])
        as v(org_id, livemode, sale_reference, refunded, creator_refunded, platform_refunded)
      where x.org_id = v.org_id and x.livemode = v.livemode and x.sale_reference = v.sale_reference and not x.reversed
      returning 1
    ), rd as (
      update ledger.holds h set amount = h.amount - v.by
      from unnest(${quoted(rd.map((r) => r.holdId))}::text[], ${plain(rd.map((r) => r.by))}::bigint[]) as v(id, by)
      where h.id = v.id and h.status = 'held' and h.amount > v.by
      returning 1
    ), en as (
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount, balance_after)
      select * from unnest(${plain(e.map((r) => r.id))}::text[], ${quoted(e.map((r) => r.orgId))}::text[], ${bools(e.map((r) => r.livemode))}::boolean[],
        ${plain(e.map((r) => r.transactionId))}::text[], ${plain(e.map((r) => r.accountId))}::uuid[], ${plain(e.map((r) => r.entryType))}::text[],
        ${plain(e.map((r) => r.amount))}::bigint[], ${ints(e.map((r) => r.balanceAfter))}::bigint[])
      returning 1
    ), wa as (
      update ledger.accounts a set balance = v.balance, held_amount = v.held
      from unnest(${plain(wa.map((r) => r.id))}::uuid[], ${plain(wa.map((r) => r.balance))}::bigint[], ${plain(wa.map((r) => r.held))}::bigint[],
        ${plain(wa.map((r) => r.xmin))}::xid[]) as v(id, balance, held, xmin)
      where a.id = v.id and a.is_wallet and a.xmin = v.xmin
      returning a.xmin::text as xmin
    ), sh as (
      update ledger.account_balance_shards s set balance = s.balance + v.delta
      from unnest(${plain(sh.map((r) => r.accountId))}::uuid[], ${plain(sh.map((r) => r.shard))}::int2[], ${plain(sh.map((r) => r.delta))}::bigint[]) as v(account_id, shard, delta)
      where s.account_id = v.account_id and s.shard = v.shard
      returning 1
    ), ob as (
      insert into ledger.outbox (id, org_id, livemode, type, subject, payload, headers)
      select v.id, v.org_id, v.livemode, v.type, v.subject, j.doc -> 0, j.doc -> 1
      from unnest(${plain(ev.map((r) => r.id))}::text[], ${quoted(ev.map((r) => r.orgId))}::text[], ${bools(ev.map((r) => r.livemode))}::boolean[],
        ${quoted(ev.map((r) => r.type))}::text[], ${quoted(ev.map((r) => eventSubject("", r.type)))}::text[])
        with ordinality as v(id, org_id, livemode, type, subject, n)
      join jsonb_array_elements(${q.json(ev.map((r) => [{ data: r.data }, r.headers]) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      returning 1
    ), ho as (
      insert into ledger.holds (id, org_id, livemode, wallet_id, participant_id, amount, reference_id, hold_reason_code,
        hold_reason_description, hold_until, release_transfer_to_participant_id, status, transaction_id, metadata)
      select v.id, v.org_id, v.livemode, v.wallet_id, v.participant_id, v.amount, v.reference_id, v.reason_code, v.description,
        v.hold_until, v.release_to, 'held', v.transaction_id, j.doc
      from unnest(${plain(ho.map((r) => r.id))}::text[], ${quoted(ho.map((r) => r.orgId))}::text[], ${bools(ho.map((r) => r.livemode))}::boolean[],
        ${plain(ho.map((r) => r.walletId))}::uuid[], ${quoted(ho.map((r) => r.participantId))}::text[], ${plain(ho.map((r) => r.amount))}::bigint[],
        ${quoted(ho.map((r) => r.referenceId))}::text[], ${quoted(ho.map((r) => r.reasonCode))}::text[], ${quoted(ho.map((r) => r.description))}::text[],
        ${quoted(ho.map((r) => r.holdUntil))}::timestamptz[], ${quoted(ho.map((r) => r.releaseTransferTo))}::text[], ${plain(ho.map((r) => r.transactionId))}::text[])
        with ordinality as v(id, org_id, livemode, wallet_id, participant_id, amount, reference_id, reason_code, description, hold_until, release_to, transaction_id, n)
      join jsonb_array_elements(${q.json(ho.map((r) => r.metadata) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      returning 1
    ), sa as (
      insert into ledger.sales (org_id, livemode, sale_reference, transaction_id, participant_id, gross, creator_amount,
        platform_amount, sales_tax, processing_fee, hold_id)
      select * from unnest(${quoted(sa.map((r) => r.orgId))}::text[], ${bools(sa.map((r) => r.livemode))}::boolean[],
        ${quoted(sa.map((r) => r.saleReference))}::text[], ${plain(sa.map((r) => r.transactionId))}::text[], ${quoted(sa.map((r) => r.participantId))}::text[],
        ${plain(sa.map((r) => r.gross))}::bigint[], ${plain(sa.map((r) => r.creatorAmount))}::bigint[], ${plain(sa.map((r) => r.platformAmount))}::bigint[],
        ${plain(sa.map((r) => r.salesTax))}::bigint[], ${plain(sa.map((r) => r.processingFee))}::bigint[], ${quoted(sa.map((r) => r.holdId))}::text[])
      returning 1
    )
    -- Inside the statement, so a mismatch fails it (and the COMMIT pipelined behind it then rolls back).
    select ledger.batch_write_check(
      (select count(*) from tx) = ${ti.length} and (select count(*) from tu) = ${tu.length} and (select count(*) from re) = ${re.length}
        and (select count(*) from rd) = ${rd.length} and (select count(*) from su) = ${su.length}
        and (select count(*) from en) = ${e.length} and (select count(*) from wa) = ${wa.length}
        and (select count(*) from sh) = ${sh.length} and (select count(*) from ob) = ${ev.length}
        and (select count(*) from ho) = ${ho.length} and (select count(*) from sa) = ${sa.length},
      ${`${ti.length} + ${tu.length} transactions, ${re.length} releases, ${e.length} entries, ${wa.length} wallets, ${sh.length} shards, ${ev.length} events, ${ho.length} holds, ${sa.length} sales`}) as ok,
      (select xmin from wa limit 1) as xmin`
    .execute()
    .then((rows) => (rows[0] as { xmin: string | null } | undefined)?.xmin ?? null);
}
