/** Holds: reserved parts of a wallet's balance, and their release records. */
import type { Cents } from "@treasury/contracts";
import { money, type Json, type Q } from "./db.ts";
import type { Scope } from "./accounts.ts";

export interface HoldRow {
  id: string;
  org_id: string;
  livemode: boolean;
  wallet_id: string;
  participant_id: string | null;
  amount: Cents;
  reference_id: string;
  hold_reason_code: string;
  hold_reason_description: string | null;
  hold_until: Date | null;
  release_transfer_to_participant_id: string | null;
  status: "held" | "released";
  transaction_id: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  release_id: string | null;
  released_at: Date | null;
  release_transaction_id: string | null;
  release_transfer_executed: boolean | null;
}

type RawHold = Omit<HoldRow, "amount"> & { amount: string };

function toHold(r: RawHold): HoldRow {
  return { ...r, amount: money(r.amount) };
}

const cols = (q: Q) => q`
  id, org_id, livemode, wallet_id, participant_id, amount, reference_id, hold_reason_code, hold_reason_description,
  hold_until, release_transfer_to_participant_id, status, transaction_id, metadata, created_at, release_id,
  released_at, release_transaction_id, release_transfer_executed`;

export async function findHold(q: Q, s: Scope, id: string): Promise<HoldRow | undefined> {
  const [row] = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : toHold(row);
}

export async function findHoldsByIds(q: Q, s: Scope, ids: readonly string[]): Promise<HoldRow[]> {
  if (ids.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds where id = any(${[...ids]}::text[]) and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return rows.map(toHold);
}

export async function findHoldByReference(q: Q, s: Scope, referenceId: string): Promise<HoldRow | undefined> {
  const [row] = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds where reference_id = ${referenceId} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : toHold(row);
}

/** Locks holds in id order; callers lock the holds' wallets first (wallets, then holds: one order everywhere). */
export async function lockHolds(q: Q, s: Scope, ids: readonly string[]): Promise<HoldRow[]> {
  if (ids.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds
    where id = any(${[...ids]}::text[]) and org_id = ${s.orgId} and livemode = ${s.livemode}
    order by id
    for update`;
  return rows.map(toHold);
}

export interface NewHold {
  id: string;
  walletId: string;
  participantId: string | null;
  amount: number;
  referenceId: string;
  reasonCode: string;
  description: string | null;
  holdUntil: Date | null;
  releaseTransferTo: string | null;
  transactionId: string;
  metadata: Record<string, unknown>;
}

export async function insertHold(q: Q, s: Scope, h: NewHold): Promise<HoldRow> {
  const [row] = await q<RawHold[]>`
    insert into ledger.holds (id, org_id, livemode, wallet_id, participant_id, amount, reference_id, hold_reason_code,
      hold_reason_description, hold_until, release_transfer_to_participant_id, status, transaction_id, metadata)
    values (${h.id}, ${s.orgId}, ${s.livemode}, ${h.walletId}, ${h.participantId}, ${h.amount}, ${h.referenceId},
      ${h.reasonCode}, ${h.description}, ${h.holdUntil}, ${h.releaseTransferTo}, 'held', ${h.transactionId},
      ${q.json(h.metadata as Json)})
    returning ${cols(q)}`;
  if (row === undefined) throw new Error("hold insert returned nothing");
  return toHold(row);
}

export async function markReleased(
  q: Q,
  s: Scope,
  holdId: string,
  r: { releaseId: string; transactionId: string; transferExecuted: boolean },
): Promise<HoldRow> {
  const [row] = await q<RawHold[]>`
    update ledger.holds
    set status = 'released', release_id = ${r.releaseId}, released_at = now(), release_transaction_id = ${r.transactionId},
      release_transfer_executed = ${r.transferExecuted}
    where id = ${holdId} and org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'held'
    returning ${cols(q)}`;
  if (row === undefined) throw new Error(`hold ${holdId} was not held while locked`);
  return toHold(row);
}

export interface HoldFilter {
  participantId?: string | undefined;
  walletId?: string | undefined;
  ventureId?: string | undefined;
  readyOnly?: boolean | undefined;
  status?: "held" | "released" | undefined;
}

export async function listHolds(q: Q, s: Scope, f: HoldFilter, limit: number, offset: number): Promise<{ rows: HoldRow[]; total: number }> {
  const where = q`
    org_id = ${s.orgId} and livemode = ${s.livemode}
    ${f.status !== undefined ? q`and status = ${f.status}` : q``}
    ${f.participantId !== undefined ? q`and participant_id = ${f.participantId}` : q``}
    ${f.walletId !== undefined ? q`and wallet_id = ${f.walletId}` : q``}
    ${f.ventureId !== undefined ? q`and metadata->>'venture_id' = ${f.ventureId}` : q``}
    ${f.readyOnly === true ? q`and (hold_until is null or hold_until <= now())` : q``}`;
  const rows = await q<RawHold[]>`select ${cols(q)} from ledger.holds where ${where} order by created_at, id limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.holds where ${where}`;
  return { rows: rows.map(toHold), total: Number(count?.n ?? 0) };
}

export interface HoldsSummaryRow {
  total_held: Cents;
  total_ready: Cents;
  count: number;
  by_reason: Record<string, Cents>;
}

export async function holdsSummary(q: Q, s: Scope): Promise<HoldsSummaryRow> {
  const rows = await q<{ code: string; held: string; ready: string; n: string }[]>`
    select hold_reason_code as code, sum(amount)::bigint as held,
      coalesce(sum(amount) filter (where hold_until is null or hold_until <= now()), 0)::bigint as ready, count(*) as n
    from ledger.holds where org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'held'
    group by hold_reason_code order by hold_reason_code`;
  let totalHeld = 0;
  let totalReady = 0;
  let count = 0;
  const byReason: Record<string, Cents> = {};
  for (const r of rows) {
    totalHeld += money(r.held);
    totalReady += money(r.ready);
    count += Number(r.n);
    byReason[r.code] = money(r.held);
  }
  return { total_held: money(totalHeld), total_ready: money(totalReady), count, by_reason: byReason };
}

/** Active holds of some wallets, oldest first. */
export async function activeHoldsOfWallets(q: Q, s: Scope, walletIds: readonly string[]): Promise<HoldRow[]> {
  if (walletIds.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds
    where wallet_id = any(${[...walletIds]}::uuid[]) and org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'held'
    order by created_at, id`;
  return rows.map(toHold);
}

/** Takes part of a held hold's amount back (a reversal using the sale's hold); the rest stays held. */
export async function reduceHold(q: Q, s: Scope, holdId: string, by: number): Promise<void> {
  const res = await q`
    update ledger.holds set amount = amount - ${by}
    where id = ${holdId} and org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'held' and amount > ${by}`;
  if (res.count !== 1) throw new Error(`hold ${holdId} not reduced by ${by}`);
}
