/** Accounts: system accounts (sharded balances) and wallets (one exact row each). */
import { newUuid, type Tenant } from "@treasury/contracts";
import { BALANCE_SHARDS, NORMAL_SIDE, SYSTEM_ACCOUNT_NAMES, type AccountType, type Side, type SystemAccountType } from "../domain/accounts.ts";
import type { NewWallet, SystemAccount, WalletFilter, WalletRow } from "../usecases/rows.ts";
import { money, type Json, type Q, type Sql } from "./db.ts";

interface RawWallet extends Omit<WalletRow, "balance" | "held_amount"> {
  balance: string;
  held_amount: string;
}

function toWallet(r: RawWallet): WalletRow {
  return { ...r, balance: money(r.balance), held_amount: money(r.held_amount) };
}

const walletColumns = (q: Q) => q`
  id, org_id, livemode, account_type, normal_side, balance, held_amount, owner_id, owner_type, participant_id, name,
  status, redeemable, transferable, topup_supported, payout_supported, metadata, created_at`;

export async function findWalletById(q: Q, s: Tenant, id: string): Promise<WalletRow | undefined> {
  const [row] = await q<RawWallet[]>`
    select ${walletColumns(q)} from ledger.accounts
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and is_wallet`;
  return row === undefined ? undefined : toWallet(row);
}

export async function findCreatorWallet(q: Q, s: Tenant, participantId: string): Promise<WalletRow | undefined> {
  const [row] = await q<RawWallet[]>`
    select ${walletColumns(q)} from ledger.accounts
    where org_id = ${s.orgId} and livemode = ${s.livemode} and account_type = 'creator_earnings'
      and participant_id = ${participantId}`;
  return row === undefined ? undefined : toWallet(row);
}

export async function findConsumerWallet(q: Q, s: Tenant, ownerId: string): Promise<WalletRow | undefined> {
  const [row] = await q<RawWallet[]>`
    select ${walletColumns(q)} from ledger.accounts
    where org_id = ${s.orgId} and livemode = ${s.livemode} and account_type = 'consumer_credit' and owner_id = ${ownerId}`;
  return row === undefined ? undefined : toWallet(row);
}

/** Inserts a wallet; answers undefined when the owner already has one of that type (the unique key). */
export async function insertWallet(q: Q, s: Tenant, w: NewWallet): Promise<WalletRow | undefined> {
  const conflict =
    w.type === "creator_earnings"
      ? q`on conflict (org_id, livemode, participant_id) where account_type = 'creator_earnings' do nothing`
      : q`on conflict (org_id, livemode, owner_id) where account_type = 'consumer_credit' do nothing`;
  const [row] = await q<RawWallet[]>`
    insert into ledger.accounts (id, org_id, livemode, account_type, normal_side, name, owner_id, owner_type, participant_id,
      redeemable, transferable, topup_supported, payout_supported, metadata)
    values (${w.id ?? newUuid()}, ${s.orgId}, ${s.livemode}, ${w.type}, ${NORMAL_SIDE[w.type]}, ${w.name}, ${w.ownerId},
      ${w.ownerType}, ${w.participantId}, ${w.flags.redeemable}, ${w.flags.transferable}, ${w.flags.topup_supported},
      ${w.flags.payout_supported}, ${q.json(w.metadata as Json)})
    ${conflict}
    returning ${walletColumns(q)}`;
  return row === undefined ? undefined : toWallet(row);
}

export async function listWallets(q: Q, s: Tenant, f: WalletFilter, limit: number, offset: number): Promise<{ rows: WalletRow[]; total: number }> {
  const where = q`
    org_id = ${s.orgId} and livemode = ${s.livemode} and is_wallet
    ${f.ownerId !== undefined ? q`and owner_id = ${f.ownerId}` : q``}
    ${f.ownerType !== undefined ? q`and owner_type = ${f.ownerType}` : q``}
    ${f.walletType !== undefined ? q`and account_type = ${f.walletType}` : q``}`;
  const rows = await q<RawWallet[]>`
    select ${walletColumns(q)} from ledger.accounts where ${where} order by created_at, id limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.accounts where ${where}`;
  return { rows: rows.map(toWallet), total: Number(count?.n ?? 0) };
}

/**
 * System account ids never change once created, so they are cached per pool. Creation happens outside any
 * posting transaction (its own autocommit statement), so a cached id always names a committed row.
 */
const systemAccountCache = new WeakMap<object, Map<string, string>>();

export async function ensureSystemAccount(sql: Sql, s: Tenant, type: SystemAccountType, entityId = ""): Promise<SystemAccount> {
  const key = `${s.orgId}\u0000${s.livemode}\u0000${type}\u0000${entityId}`;
  let cache = systemAccountCache.get(sql);
  if (cache === undefined) {
    cache = new Map();
    systemAccountCache.set(sql, cache);
  }
  const cached = cache.get(key);
  if (cached !== undefined) return { id: cached, type, normal: NORMAL_SIDE[type] };
  const name = entityId === "" ? SYSTEM_ACCOUNT_NAMES[type] : `${SYSTEM_ACCOUNT_NAMES[type]} (${entityId})`;
  // One statement creates the account and its shards, or does nothing when it exists.
  await sql`
    with created as (
      insert into ledger.accounts (id, org_id, livemode, account_type, normal_side, entity_id, name)
      values (${newUuid()}, ${s.orgId}, ${s.livemode}, ${type}, ${NORMAL_SIDE[type]}, ${entityId}, ${name})
      on conflict (org_id, livemode, account_type, entity_id) where not is_wallet do nothing
      returning id)
    insert into ledger.account_balance_shards (account_id, shard)
    select created.id, g from created, generate_series(0, ${BALANCE_SHARDS - 1}::int) g`;
  const [row] = await sql<{ id: string }[]>`
    select id from ledger.accounts
    where org_id = ${s.orgId} and livemode = ${s.livemode} and account_type = ${type} and entity_id = ${entityId}
      and not is_wallet`;
  if (row === undefined) throw new Error(`system account ${type} missing right after its creation`);
  cache.set(key, row.id);
  return { id: row.id, type, normal: NORMAL_SIDE[type] };
}

/** Kinds of accounts named by id (posting hooks name accounts by id), scoped to org+env. */
export async function accountKinds(
  q: Q,
  s: Tenant,
  ids: readonly string[],
): Promise<{ id: string; normal_side: Side; is_wallet: boolean; account_type: AccountType }[]> {
  if (ids.length === 0) return [];
  return q<{ id: string; normal_side: Side; is_wallet: boolean; account_type: AccountType }[]>`
    select id, normal_side, is_wallet, account_type from ledger.accounts
    where id = any(${[...ids]}::uuid[]) and org_id = ${s.orgId} and livemode = ${s.livemode}`;
}
