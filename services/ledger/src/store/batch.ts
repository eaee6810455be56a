/**
 * The one writer of ledger balances and entries: every write of a posting batch in one set-based statement
 * (writeBatch), whatever the batch's size. A single post is a batch of one. Nothing else in the ledger inserts
 * entries, changes a wallet's balance or held amount, or adds to a system account's balance shards.
 */
import { eventSubject, type EventType } from "@treasury/contracts";
import type { JSONValue } from "postgres";
import type { Side } from "../domain/accounts.ts";
import { bools, ints, plain, quoted } from "./arrays.ts";
import type { Fragment, Q } from "./db.ts";
import type { NewSale } from "./sales.ts";
import type { NewTransaction } from "./transactions.ts";

/** A transaction to claim in a batch: a NewTransaction with its scope (batches span orgs). */
export interface ClaimRow extends Omit<NewTransaction, "effectiveAt"> {
  orgId: string;
  livemode: boolean;
  /** ISO 8601, or null: the moment of posting. */
  effectiveAt: string | null;
  /** Already inserted at the start of the transaction (a claim taken first): the write stores its result. */
  claimed: boolean;
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
   * meanwhile is not written, and the statement then fails (see posting/wallet-cache.ts).
   */
  wallets: readonly { id: string; balance: number; held: number; xmin: string }[];
  /** (account, shard, delta): a batch's shards never overlap another in-flight batch's (see posting/poster.ts). */
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

/** A hold the batch creates, with its scope (batches span orgs). */
export interface BatchHold {
  id: string;
  orgId: string;
  livemode: boolean;
  walletId: string;
  participantId: string | null;
  amount: number;
  referenceId: string;
  reasonCode: string;
  description: string | null;
  /** ISO 8601, or null: ready for release at once. */
  holdUntil: string | null;
  releaseTransferTo: string | null;
  transactionId: string;
  metadata: Record<string, unknown>;
  /** Released by the ledger's auto-release job once its clock passes holdUntil. */
  autoRelease: boolean;
}

/** A sale the batch records: a NewSale with its scope. */
export interface BatchSale extends NewSale {
  orgId: string;
  livemode: boolean;
}

type Transactions = BatchWrite["transactions"];

/**
 * Every write of a batch in ONE statement (data-modifying CTEs): the transactions with their results, the
 * entries, the wallets' new balances, the shard deltas, the holds and sales created, and the outbox rows (no
 * NOTIFY: notifying commits serialise under one lock; the relay's short poll finds the rows, ADR 0003). A reference
 * already claimed, committed or by a concurrent transaction, fails the statement (unique violation on
 * transactions_reference_uq) and the batch is re-run after reading the claims. The statement is sent at once
 * (`execute`), so the caller can pipeline COMMIT right behind it. Answers the row version (xmin) the written
 * wallets now have. Each CTE is a fragment of its own below; postgres.js inlines them into the one statement.
 */
export function writeBatch(q: Q, w: BatchWrite): Promise<string | null> {
  const ti = w.transactions.filter((r) => !r.claimed);
  const tu = w.transactions.filter((r) => r.claimed);
  return q`
    with tx as (${insertTransactions(q, ti)}), tu as (${updateClaimed(q, tu)}), re as (${releaseHolds(q, w.releases)}),
    su as (${updateSales(q, w.saleUpdates)}), rd as (${reduceHolds(q, w.reductions)}), en as (${insertEntries(q, w.entries)}),
    wa as (${updateWallets(q, w.wallets)}), sh as (${addToShards(q, w.shards)}), ob as (${insertEvents(q, w.events)}),
    ho as (${insertHolds(q, w.holds)}), sa as (${insertSales(q, w.sales)})
    -- Inside the statement, so a mismatch fails it (and the COMMIT pipelined behind it then rolls back).
    select ${countsMatch(q, w, ti.length, tu.length)} as ok, (select xmin from wa limit 1) as xmin`
    .execute()
    .then((rows) => (rows[0] as { xmin: string | null } | undefined)?.xmin ?? null);
}

/** Every CTE wrote as many rows as it was given, else the statement fails. */
function countsMatch(q: Q, w: BatchWrite, inserted: number, claimed: number): Fragment {
  const [re, rd, su, e, wa, sh, ev, ho, sa] = [w.releases, w.reductions, w.saleUpdates, w.entries, w.wallets, w.shards, w.events, w.holds, w.sales];
  return q`ledger.batch_write_check(
      (select count(*) from tx) = ${inserted} and (select count(*) from tu) = ${claimed} and (select count(*) from re) = ${re.length}
        and (select count(*) from rd) = ${rd.length} and (select count(*) from su) = ${su.length}
        and (select count(*) from en) = ${e.length} and (select count(*) from wa) = ${wa.length}
        and (select count(*) from sh) = ${sh.length} and (select count(*) from ob) = ${ev.length}
        and (select count(*) from ho) = ${ho.length} and (select count(*) from sa) = ${sa.length},
      ${`${inserted} + ${claimed} transactions, ${re.length} releases, ${e.length} entries, ${wa.length} wallets, ${sh.length} shards, ${ev.length} events, ${ho.length} holds, ${sa.length} sales`})`;
}

/**
 * A row's time on its tenant's clock: real time in live, real time plus the org's sandbox advance in sandbox, read
 * from the clock's own row in this statement so a posting made after an advance is stamped after it on every
 * replica (delay_days, statements and reports of a sandbox count on the clock). An advance only grows, so rows
 * keep their order.
 */
function clockTime(q: Q, row: string): Fragment {
  return q`now() + make_interval(secs => coalesce(${q(`${row}_clock`)}.advanced_seconds, 0))`;
}

function clockJoin(q: Q, row: string): Fragment {
  const c = q(`${row}_clock`);
  return q`left join ledger.sandbox_clocks ${c} on not ${q(row)}.livemode and ${c}.org_id = ${q(row)}.org_id`;
}

/** The batch's transactions whose claim is this statement (transactions_reference_uq decides). */
function insertTransactions(q: Q, ti: Transactions): Fragment {
  return q`
      insert into ledger.transactions (id, org_id, livemode, kind, reference_id, request_hash, amount, description, effective_at, metadata, result, created_at)
      select v.id, v.org_id, v.livemode, v.kind, v.reference_id, v.request_hash, v.amount, v.description, v.effective_at, j.doc -> 0, j.doc -> 1,
        ${clockTime(q, "v")}
      from unnest(${plain(ti.map((r) => r.id))}::text[], ${quoted(ti.map((r) => r.orgId))}::text[], ${bools(ti.map((r) => r.livemode))}::boolean[],
        ${quoted(ti.map((r) => r.kind))}::text[], ${quoted(ti.map((r) => r.referenceId))}::text[], ${plain(ti.map((r) => r.requestHash))}::text[],
        ${plain(ti.map((r) => r.amount))}::bigint[], ${quoted(ti.map((r) => r.description))}::text[], ${quoted(ti.map((r) => r.effectiveAt))}::timestamptz[])
        with ordinality as v(id, org_id, livemode, kind, reference_id, request_hash, amount, description, effective_at, n)
      join jsonb_array_elements(${q.json(ti.map((r) => [r.metadata, r.result]) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      ${clockJoin(q, "v")}
      returning 1`;
}

/** Transactions claimed first (a request that ran alone): their amount and result. */
function updateClaimed(q: Q, tu: Transactions): Fragment {
  return q`
      update ledger.transactions x set amount = v.amount, result = j.doc
      from unnest(${plain(tu.map((r) => r.id))}::text[], ${plain(tu.map((r) => r.amount))}::bigint[]) with ordinality as v(id, amount, n)
      join jsonb_array_elements(${q.json(tu.map((r) => r.result) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      where x.id = v.id
      returning 1`;
}

function releaseHolds(q: Q, re: BatchWrite["releases"]): Fragment {
  return q`
      update ledger.holds h set status = 'released', release_id = v.release_id, released_at = now(),
        release_transaction_id = v.transaction_id, release_transfer_executed = v.executed
      from unnest(${quoted(re.map((r) => r.holdId))}::text[], ${plain(re.map((r) => r.releaseId))}::text[], ${plain(re.map((r) => r.transactionId))}::text[],
        ${bools(re.map((r) => r.transferExecuted))}::boolean[]) as v(id, release_id, transaction_id, executed)
      where h.id = v.id and h.status = 'held'
      returning 1`;
}

function updateSales(q: Q, su: BatchWrite["saleUpdates"]): Fragment {
  return q`
      update ledger.sales x set refunded_amount = v.refunded, creator_refunded = v.creator_refunded, platform_refunded = v.platform_refunded
      from unnest(${quoted(su.map((r) => r.orgId))}::text[], ${bools(su.map((r) => r.livemode))}::boolean[], ${quoted(su.map((r) => r.saleReference))}::text[],
        ${plain(su.map((r) => r.refunded))}::bigint[], ${plain(su.map((r) => r.creatorRefunded))}::bigint[], ${plain(su.map((r) => r.platformRefunded))}::bigint[])
        as v(org_id, livemode, sale_reference, refunded, creator_refunded, platform_refunded)
      where x.org_id = v.org_id and x.livemode = v.livemode and x.sale_reference = v.sale_reference and not x.reversed
      returning 1`;
}

function reduceHolds(q: Q, rd: BatchWrite["reductions"]): Fragment {
  return q`
      update ledger.holds h set amount = h.amount - v.by
      from unnest(${quoted(rd.map((r) => r.holdId))}::text[], ${plain(rd.map((r) => r.by))}::bigint[]) as v(id, by)
      where h.id = v.id and h.status = 'held' and h.amount > v.by
      returning 1`;
}

/**
 * Entries in the batch's order: `seq` is drawn as rows are inserted, and readers pair a transaction's entries back
 * into postings by it (each posting's debit, then its credit). The clock's join may hash the rows into any order,
 * so they are sorted back by their position.
 */
function insertEntries(q: Q, e: BatchWrite["entries"]): Fragment {
  return q`
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount, balance_after, created_at)
      select v.id, v.org_id, v.livemode, v.transaction_id, v.account_id, v.entry_type, v.amount, v.balance_after, ${clockTime(q, "v")}
      from unnest(${plain(e.map((r) => r.id))}::text[], ${quoted(e.map((r) => r.orgId))}::text[], ${bools(e.map((r) => r.livemode))}::boolean[],
        ${plain(e.map((r) => r.transactionId))}::text[], ${plain(e.map((r) => r.accountId))}::uuid[], ${plain(e.map((r) => r.entryType))}::text[],
        ${plain(e.map((r) => r.amount))}::bigint[], ${ints(e.map((r) => r.balanceAfter))}::bigint[])
        with ordinality as v(id, org_id, livemode, transaction_id, account_id, entry_type, amount, balance_after, n)
      ${clockJoin(q, "v")}
      order by v.n
      returning 1`;
}

/** Wallets' new balances, each only at the row version the batch computed from. */
function updateWallets(q: Q, wa: BatchWrite["wallets"]): Fragment {
  return q`
      update ledger.accounts a set balance = v.balance, held_amount = v.held
      from unnest(${plain(wa.map((r) => r.id))}::uuid[], ${plain(wa.map((r) => r.balance))}::bigint[], ${plain(wa.map((r) => r.held))}::bigint[],
        ${plain(wa.map((r) => r.xmin))}::xid[]) as v(id, balance, held, xmin)
      where a.id = v.id and a.is_wallet and a.xmin = v.xmin
      returning a.xmin::text as xmin`;
}

function addToShards(q: Q, sh: BatchWrite["shards"]): Fragment {
  return q`
      update ledger.account_balance_shards s set balance = s.balance + v.delta
      from unnest(${plain(sh.map((r) => r.accountId))}::uuid[], ${plain(sh.map((r) => r.shard))}::int2[], ${plain(sh.map((r) => r.delta))}::bigint[]) as v(account_id, shard, delta)
      where s.account_id = v.account_id and s.shard = v.shard
      returning 1`;
}

function insertEvents(q: Q, ev: BatchWrite["events"]): Fragment {
  return q`
      insert into ledger.outbox (id, org_id, livemode, type, subject, payload, headers)
      select v.id, v.org_id, v.livemode, v.type, v.subject, j.doc -> 0, j.doc -> 1
      from unnest(${plain(ev.map((r) => r.id))}::text[], ${quoted(ev.map((r) => r.orgId))}::text[], ${bools(ev.map((r) => r.livemode))}::boolean[],
        ${quoted(ev.map((r) => r.type))}::text[], ${quoted(ev.map((r) => eventSubject("", r.type)))}::text[])
        with ordinality as v(id, org_id, livemode, type, subject, n)
      join jsonb_array_elements(${q.json(ev.map((r) => [{ data: r.data }, r.headers]) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      returning 1`;
}

function insertHolds(q: Q, ho: BatchWrite["holds"]): Fragment {
  return q`
      insert into ledger.holds (id, org_id, livemode, wallet_id, participant_id, amount, reference_id, hold_reason_code,
        hold_reason_description, hold_until, release_transfer_to_participant_id, status, transaction_id, metadata, auto_release)
      select v.id, v.org_id, v.livemode, v.wallet_id, v.participant_id, v.amount, v.reference_id, v.reason_code, v.description,
        v.hold_until, v.release_to, 'held', v.transaction_id, j.doc, v.auto_release
      from unnest(${plain(ho.map((r) => r.id))}::text[], ${quoted(ho.map((r) => r.orgId))}::text[], ${bools(ho.map((r) => r.livemode))}::boolean[],
        ${plain(ho.map((r) => r.walletId))}::uuid[], ${quoted(ho.map((r) => r.participantId))}::text[], ${plain(ho.map((r) => r.amount))}::bigint[],
        ${quoted(ho.map((r) => r.referenceId))}::text[], ${quoted(ho.map((r) => r.reasonCode))}::text[], ${quoted(ho.map((r) => r.description))}::text[],
        ${quoted(ho.map((r) => r.holdUntil))}::timestamptz[], ${quoted(ho.map((r) => r.releaseTransferTo))}::text[], ${plain(ho.map((r) => r.transactionId))}::text[],
        ${bools(ho.map((r) => r.autoRelease))}::boolean[])
        with ordinality as v(id, org_id, livemode, wallet_id, participant_id, amount, reference_id, reason_code, description, hold_until, release_to,
          transaction_id, auto_release, n)
      join jsonb_array_elements(${q.json(ho.map((r) => r.metadata) as JSONValue)}::jsonb) with ordinality as j(doc, n) on j.n = v.n
      returning 1`;
}

function insertSales(q: Q, sa: BatchWrite["sales"]): Fragment {
  return q`
      insert into ledger.sales (org_id, livemode, sale_reference, transaction_id, participant_id, gross, creator_amount,
        platform_amount, sales_tax, processing_fee, hold_id)
      select * from unnest(${quoted(sa.map((r) => r.orgId))}::text[], ${bools(sa.map((r) => r.livemode))}::boolean[],
        ${quoted(sa.map((r) => r.saleReference))}::text[], ${plain(sa.map((r) => r.transactionId))}::text[], ${quoted(sa.map((r) => r.participantId))}::text[],
        ${plain(sa.map((r) => r.gross))}::bigint[], ${plain(sa.map((r) => r.creatorAmount))}::bigint[], ${plain(sa.map((r) => r.platformAmount))}::bigint[],
        ${plain(sa.map((r) => r.salesTax))}::bigint[], ${plain(sa.map((r) => r.processingFee))}::bigint[], ${quoted(sa.map((r) => r.holdId))}::text[])
      returning 1`;
}
