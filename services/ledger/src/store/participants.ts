/** Participants: the client's creators, each with its creator_earnings wallet. */
import type { Tenant } from "@treasury/contracts";
import type { NewParticipant, ParticipantRow, ParticipantWithBalance } from "../usecases/rows.ts";
import { money, type Json, type Q } from "./db.ts";

const cols = (q: Q) => q`
  p.participant_id, p.account_id, p.wallet_id, p.user_id, p.display_name, p.email, p.default_split_bps, p.tax_info,
  p.payout_preferences, p.metadata, p.request_hash, p.created_at`;

/** Inserts a participant; undefined when the participant id exists already. */
export async function insertParticipant(q: Q, s: Tenant, p: NewParticipant): Promise<ParticipantRow | undefined> {
  const [row] = await q<ParticipantRow[]>`
    insert into ledger.participants as p (org_id, livemode, participant_id, account_id, wallet_id, user_id, display_name,
      email, default_split_bps, tax_info, payout_preferences, metadata, request_hash)
    values (${s.orgId}, ${s.livemode}, ${p.participantId}, ${p.walletId}, ${p.walletId}, ${p.userId}, ${p.displayName},
      ${p.email}, ${p.defaultSplitBps}, ${p.taxInfo === null ? null : q.json(p.taxInfo as Json)},
      ${p.payoutPreferences === null ? null : q.json(p.payoutPreferences as Json)}, ${q.json(p.metadata as Json)},
      ${p.requestHash})
    on conflict (org_id, livemode, participant_id) do nothing
    returning ${cols(q)}`;
  return row;
}

type RawWithBalance = ParticipantRow & { balance: string; held_amount: string; owed: string };

function toWithBalance(r: RawWithBalance): ParticipantWithBalance {
  return { ...r, balance: money(r.balance), held_amount: money(r.held_amount), owed: money(r.owed) };
}

/**
 * What the creator owes the platform: the balance of its creator_receivable (a refund, dispute or return the
 * wallet could not cover, repaid from the next earnings by the posting engine).
 */
function owed(q: Q) {
  return q`coalesce((select sum(sh.balance) from ledger.accounts r join ledger.account_balance_shards sh on sh.account_id = r.id
    where r.org_id = p.org_id and r.livemode = p.livemode and r.account_type = 'creator_receivable' and r.entity_id = p.participant_id
      and not r.is_wallet), 0)::bigint as owed`;
}

export async function findParticipant(q: Q, s: Tenant, participantId: string): Promise<ParticipantWithBalance | undefined> {
  const [row] = await q<RawWithBalance[]>`
    select ${cols(q)}, a.balance, a.held_amount, ${owed(q)}
    from ledger.participants p join ledger.accounts a on a.id = p.wallet_id
    where p.org_id = ${s.orgId} and p.livemode = ${s.livemode} and p.participant_id = ${participantId}`;
  return row === undefined ? undefined : toWithBalance(row);
}

/** The participants named that exist, in one statement (an unknown id is not in the answer). */
export async function findParticipants(q: Q, s: Tenant, participantIds: readonly string[]): Promise<ParticipantWithBalance[]> {
  if (participantIds.length === 0) return [];
  const rows = await q<RawWithBalance[]>`
    select ${cols(q)}, a.balance, a.held_amount, ${owed(q)}
    from ledger.participants p join ledger.accounts a on a.id = p.wallet_id
    where p.org_id = ${s.orgId} and p.livemode = ${s.livemode} and p.participant_id = any(${[...participantIds]}::text[])`;
  return rows.map(toWithBalance);
}

export async function listParticipants(q: Q, s: Tenant, limit: number, offset: number): Promise<{ rows: ParticipantWithBalance[]; total: number }> {
  const rows = await q<RawWithBalance[]>`
    select ${cols(q)}, a.balance, a.held_amount, ${owed(q)}
    from ledger.participants p join ledger.accounts a on a.id = p.wallet_id
    where p.org_id = ${s.orgId} and p.livemode = ${s.livemode}
    order by p.created_at, p.participant_id
    limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`
    select count(*) as n from ledger.participants where org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return { rows: rows.map(toWithBalance), total: Number(count?.n ?? 0) };
}

export async function participantExists(q: Q, s: Tenant, participantId: string): Promise<boolean> {
  const [row] = await q`
    select 1 from ledger.participants where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId}`;
  return row !== undefined;
}
