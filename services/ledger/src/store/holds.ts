/** Holds: reserved parts of a wallet's balance, and their release records. */
import type { Cents, Tenant } from "@treasury/contracts";
import type { DueHold } from "../usecases/ports.ts";
import type { HoldFilter, HoldRow, HoldsSummaryRow } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

type RawHold = Omit<HoldRow, "amount"> & { amount: string };

function toHold(r: RawHold): HoldRow {
  return { ...r, amount: money(r.amount) };
}

const cols = (q: Q) => q`
  id, org_id, livemode, wallet_id, participant_id, amount, reference_id, hold_reason_code, hold_reason_description,
  hold_until, release_transfer_to_participant_id, status, transaction_id, metadata, created_at, release_id,
  released_at, release_transaction_id, release_transfer_executed, auto_release`;

export async function findHold(q: Q, s: Tenant, id: string): Promise<HoldRow | undefined> {
  const [row] = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : toHold(row);
}

export async function findHoldsByIds(q: Q, s: Tenant, ids: readonly string[]): Promise<HoldRow[]> {
  if (ids.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds where id = any(${[...ids]}::text[]) and org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return rows.map(toHold);
}

/** Locks holds in id order; callers lock the holds' wallets first (wallets, then holds: one order everywhere). */
export async function lockHolds(q: Q, s: Tenant, ids: readonly string[]): Promise<HoldRow[]> {
  if (ids.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds
    where id = any(${[...ids]}::text[]) and org_id = ${s.orgId} and livemode = ${s.livemode}
    order by id
    for update`;
  return rows.map(toHold);
}

export async function listHolds(q: Q, s: Tenant, f: HoldFilter, limit: number, offset: number): Promise<{ rows: HoldRow[]; total: number }> {
  const where = q`
    org_id = ${s.orgId} and livemode = ${s.livemode}
    ${f.status !== undefined ? q`and status = ${f.status}` : q``}
    ${f.participantId !== undefined ? q`and participant_id = ${f.participantId}` : q``}
    ${f.walletId !== undefined ? q`and wallet_id = ${f.walletId}` : q``}
    ${f.ventureId !== undefined ? q`and metadata->>'venture_id' = ${f.ventureId}` : q``}
    ${f.readyOnly === true ? q`and (hold_until is null or hold_until <= ${f.now ?? new Date()})` : q``}`;
  const rows = await q<RawHold[]>`select ${cols(q)} from ledger.holds where ${where} order by created_at, id limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.holds where ${where}`;
  return { rows: rows.map(toHold), total: Number(count?.n ?? 0) };
}

export async function holdsSummary(q: Q, s: Tenant, now: Date): Promise<HoldsSummaryRow> {
  const rows = await q<{ code: string; held: string; ready: string; n: string }[]>`
    select hold_reason_code as code, sum(amount)::bigint as held,
      coalesce(sum(amount) filter (where hold_until is null or hold_until <= ${now}), 0)::bigint as ready, count(*) as n
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

/**
 * Due auto-release holds of every org and environment, in one statement: live compares hold_until with real time,
 * each sandbox with real time plus its org's advance (the advances travel as two arrays).
 */
export async function dueAutoReleaseHolds(q: Q, realNow: Date, advanced: ReadonlyMap<string, number>, limit: number): Promise<DueHold[]> {
  const orgs = [...advanced.keys()];
  const seconds = orgs.map((o) => advanced.get(o) ?? 0);
  return q<DueHold[]>`
    select h.id, h.org_id, h.livemode
    from ledger.holds h
    left join unnest(${orgs}::text[], ${seconds}::bigint[]) as c(org_id, seconds) on c.org_id = h.org_id and not h.livemode
    where h.status = 'held' and h.auto_release
      and h.hold_until <= ${realNow}::timestamptz + make_interval(secs => coalesce(c.seconds, 0))
    order by h.hold_until, h.id
    limit ${limit}`;
}

/** Active holds of some wallets, oldest first. */
export async function activeHoldsOfWallets(q: Q, s: Tenant, walletIds: readonly string[]): Promise<HoldRow[]> {
  if (walletIds.length === 0) return [];
  const rows = await q<RawHold[]>`
    select ${cols(q)} from ledger.holds
    where wallet_id = any(${[...walletIds]}::uuid[]) and org_id = ${s.orgId} and livemode = ${s.livemode} and status = 'held'
    order by created_at, id`;
  return rows.map(toHold);
}
