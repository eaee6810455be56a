/** Participants' reserves (usecases/reserves.ts): one row per participant, replaced by each PUT. */
import type { Tenant } from "@treasury/contracts";
import type { NewReserve, ReserveRow } from "../usecases/rows.ts";
import { moneyOrNull, type Q } from "./db.ts";

type RawReserve = Omit<ReserveRow, "amount_cents"> & { amount_cents: string | null };

function toReserve(r: RawReserve): ReserveRow {
  return { ...r, amount_cents: moneyOrNull(r.amount_cents) };
}

const cols = (q: Q) => q`participant_id, reserve_type, percent_bps, days, amount_cents, updated_at`;

export async function findReserves(q: Q, s: Tenant, participantIds: readonly string[]): Promise<ReserveRow[]> {
  if (participantIds.length === 0) return [];
  const rows = await q<RawReserve[]>`
    select ${cols(q)} from ledger.participant_reserves
    where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = any(${[...participantIds]}::text[])`;
  return rows.map(toReserve);
}

export async function putReserve(q: Q, s: Tenant, r: NewReserve): Promise<ReserveRow> {
  const [row] = await q<RawReserve[]>`
    insert into ledger.participant_reserves (org_id, livemode, participant_id, reserve_type, percent_bps, days, amount_cents)
    values (${s.orgId}, ${s.livemode}, ${r.participantId}, ${r.type}, ${r.percentBps}, ${r.days}, ${r.amountCents})
    on conflict (org_id, livemode, participant_id) do update
      set reserve_type = excluded.reserve_type, percent_bps = excluded.percent_bps, days = excluded.days,
        amount_cents = excluded.amount_cents, updated_at = now()
    returning ${cols(q)}`;
  if (row === undefined) throw new Error(`reserve of ${r.participantId} not written`);
  return toReserve(row);
}
