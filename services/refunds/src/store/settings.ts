/**
 * Each org's refund settings per environment (docs/adr/0009-refund-shortfall.md). The service reads the policy
 * inside the statement that records a refund intent (store/refunds.ts); operators set it with the admin CLI.
 */
import type { ShortfallPolicy } from "../domain/refund.ts";
import type { Tenant } from "@treasury/contracts";
import type { Q } from "./db.ts";

export const SHORTFALL_POLICIES: readonly ShortfallPolicy[] = ["receivable", "refuse"];
export const SHORTFALL_POLICY_DEFAULT: ShortfallPolicy = "receivable";

export async function shortfallPolicy(q: Q, s: Tenant): Promise<ShortfallPolicy> {
  const [row] = await q<{ shortfall_policy: ShortfallPolicy }[]>`
    select shortfall_policy from refunds.settings where org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row?.shortfall_policy ?? SHORTFALL_POLICY_DEFAULT;
}

/** Applies to refunds recorded from now on; a refund already recorded keeps the policy it was recorded with. */
export async function setShortfallPolicy(q: Q, s: Tenant, policy: ShortfallPolicy): Promise<void> {
  await q`
    insert into refunds.settings (org_id, livemode, shortfall_policy, updated_at) values (${s.orgId}, ${s.livemode}, ${policy}, now())
    on conflict (org_id, livemode) do update set shortfall_policy = excluded.shortfall_policy, updated_at = excluded.updated_at`;
}
