/** Each org's payout settings per environment: the return fee (`admin payouts set-return-fee`). */
import type { Tenant } from "@treasury/contracts";
import type { Q } from "./db.ts";

/** What a returned payout costs its creator; 0 when never set. */
export async function returnFee(q: Q, t: Tenant): Promise<number> {
  const [row] = await q<{ fee: string }[]>`
    select return_fee_cents::text as fee from payouts.org_settings where org_id = ${t.orgId} and livemode = ${t.livemode}`;
  return row === undefined ? 0 : Number(row.fee);
}

/** Applies to returns ingested from now on; a return already marked keeps the fee it was marked with. */
export async function setReturnFee(q: Q, t: Tenant, cents: number): Promise<void> {
  await q`
    insert into payouts.org_settings (org_id, livemode, return_fee_cents, updated_at) values (${t.orgId}, ${t.livemode}, ${cents}, now())
    on conflict (org_id, livemode) do update set return_fee_cents = excluded.return_fee_cents, updated_at = excluded.updated_at`;
}
