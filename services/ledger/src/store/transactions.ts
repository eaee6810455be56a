/** Transactions (the idempotency rows of every posting) and their entries. */
import type { Tenant } from "@treasury/contracts";
import type { EntryRow, TransactionRow, WalletEntryRow } from "../usecases/rows.ts";
import type { Side } from "../domain/accounts.ts";
import { iso, money, moneyOrNull, type Json, type Q } from "./db.ts";

export interface NewTransaction {
  id: string;
  kind: string;
  referenceId: string;
  requestHash: string;
  amount: number;
  description: string | null;
  metadata: Record<string, unknown>;
  /** The accounting date when it is not the moment of posting (null: created_at). */
  effectiveAt?: Date | null;
}

export type Claim = { inserted: true; createdAt: Date } | { inserted: false; id: string; requestHash: string; result: Record<string, unknown> };

/**
 * Claims (org, env, kind, reference_id). A concurrent claimant of the same key waits here for the first
 * transaction to end: if it commits, this one sees the row and answers its result; if it rolls back, this
 * one inserts. So concurrent duplicates produce exactly one transaction.
 */
export async function claimTransaction(q: Q, s: Tenant, t: NewTransaction): Promise<Claim> {
  const [ins] = await q<{ created_at: Date }[]>`
    insert into ledger.transactions (id, org_id, livemode, kind, reference_id, request_hash, amount, description, metadata, effective_at, created_at)
    values (${t.id}, ${s.orgId}, ${s.livemode}, ${t.kind}, ${t.referenceId}, ${t.requestHash}, ${t.amount},
      ${t.description}, ${q.json(t.metadata as Json)}, ${t.effectiveAt ?? null},
      -- Stamped on the tenant's clock (see store/batch.ts clockTime).
      now() + make_interval(secs => coalesce((select advanced_seconds from ledger.sandbox_clocks where not ${s.livemode} and org_id = ${s.orgId}), 0)))
    on conflict (org_id, livemode, kind, reference_id) do nothing
    returning created_at`;
  if (ins !== undefined) return { inserted: true, createdAt: ins.created_at };
  const [existing] = await q<{ id: string; request_hash: string; result: Record<string, unknown> }[]>`
    select id, request_hash, result from ledger.transactions
    where org_id = ${s.orgId} and livemode = ${s.livemode} and kind = ${t.kind} and reference_id = ${t.referenceId}`;
  if (existing === undefined) throw new Error("transaction claim conflicted but no row is visible");
  return { inserted: false, id: existing.id, requestHash: existing.request_hash, result: existing.result };
}

/** A wallet's entries, newest first. */
export async function listWalletEntries(q: Q, s: Tenant, walletId: string, limit: number, offset: number): Promise<{ rows: WalletEntryRow[]; total: number }> {
  const rows = await q<
    {
      id: string;
      entry_type: Side;
      amount: string;
      transaction_id: string;
      reference_id: string;
      kind: string;
      description: string | null;
      balance_after: string | null;
      created_at: Date;
    }[]
  >`
    select e.id, e.entry_type, e.amount, e.transaction_id, t.reference_id, t.kind, t.description, e.balance_after, e.created_at
    from ledger.entries e
    join ledger.transactions t on t.id = e.transaction_id and t.org_id = e.org_id and t.livemode = e.livemode
    where e.account_id = ${walletId} and e.org_id = ${s.orgId} and e.livemode = ${s.livemode}
    order by e.seq desc
    limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`
    select count(*) as n from ledger.entries where account_id = ${walletId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return {
    rows: rows.map((r) => ({
      entry_id: r.id,
      entry_type: r.entry_type,
      amount: money(r.amount),
      transaction_id: r.transaction_id,
      reference_id: r.reference_id,
      transaction_type: r.kind,
      description: r.description,
      balance_after: moneyOrNull(r.balance_after),
      created_at: iso(r.created_at),
    })),
    total: Number(count?.n ?? 0),
  };
}

type RawTransaction = Omit<TransactionRow, "amount" | "reversed_amount"> & { amount: string; reversed_amount: string };

function toTransaction(r: RawTransaction): TransactionRow {
  return { ...r, amount: money(r.amount), reversed_amount: money(r.reversed_amount) };
}

const txCols = (q: Q) => q`id, kind, reference_id, status, amount, reversed_amount, reversal_of, description, metadata, result, created_at`;

export async function findTransaction(q: Q, s: Tenant, id: string, opts: { forUpdate?: boolean } = {}): Promise<TransactionRow | undefined> {
  const [row] = await q<RawTransaction[]>`
    select ${txCols(q)} from ledger.transactions
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}
    ${opts.forUpdate === true ? q`for update` : q``}`;
  return row === undefined ? undefined : toTransaction(row);
}

/** The latest reversal of a transaction (answered with duplicate_reversal_reference). */
export async function latestReversal(q: Q, s: Tenant, id: string): Promise<TransactionRow | undefined> {
  const [row] = await q<RawTransaction[]>`
    select ${txCols(q)} from ledger.transactions
    where reversal_of = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}
    order by created_at desc, id desc limit 1`;
  return row === undefined ? undefined : toTransaction(row);
}

export async function markReversal(q: Q, s: Tenant, reversalId: string, originalId: string, reversedAmount: number, fully: boolean): Promise<void> {
  await q`update ledger.transactions set reversal_of = ${originalId}
    where id = ${reversalId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  await q`update ledger.transactions set reversed_amount = ${reversedAmount}, status = ${fully ? "reversed" : "posted"}
    where id = ${originalId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
}

/** A transaction's entries in the order they were written (each posting wrote its debit, then its credit). */
export async function transactionEntries(q: Q, s: Tenant, transactionId: string): Promise<EntryRow[]> {
  const rows = await q<(Omit<EntryRow, "amount" | "seq"> & { amount: string; seq: string })[]>`
    select seq, id, transaction_id, account_id, entry_type, amount from ledger.entries
    where transaction_id = ${transactionId} and org_id = ${s.orgId} and livemode = ${s.livemode}
    order by seq`;
  return rows.map((r) => ({ ...r, seq: Number(r.seq), amount: money(r.amount) }));
}
