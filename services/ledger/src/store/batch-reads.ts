/**
 * The reads of the posting transaction (posting/read.ts): everything a batch names, read and locked with one
 * statement per kind of row, whatever the batch's size. The lock order is the posting engine's (posting/index.ts):
 * sales, then wallets in ascending id order, then holds.
 */
import type { Cents } from "@treasury/contracts";
import type { Side, WalletType } from "../domain/accounts.ts";
import { bools, quoted, txt } from "./arrays.ts";
import { money, type Q } from "./db.ts";

/**
 * Transactions already holding these keys: one probe of transactions_reference_uq per key. A lateral subquery
 * per key, because `reference_id = any(...)` and joins against unnest() were planned (with the statistics of
 * a young table, and then kept as the cached generic plan) as a scan of every transaction of the kind, which
 * grew with the table and cost more than the rest of the batch. The batch path runs this only after a
 * reference was found already claimed (posting/poster.ts, readClaims); otherwise the unique index decides.
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
