/** Each org's refund shortfall policy (docs/adr/0009-refund-shortfall.md). */
import type { Tenant } from "@treasury/contracts";
import { SHORTFALL_POLICIES, setShortfallPolicy, shortfallPolicy } from "../../services/refunds/src/store/settings.ts";
import type { Commands } from "./command.ts";
import { environmentOf, need, type Ctx } from "./context.ts";

/** The org and environment the command names (--org, --env). */
function tenantOfArgs(ctx: Ctx): Tenant & { env: "test" | "live" } {
  const { env, livemode } = environmentOf(ctx.values);
  return { env, orgId: need(ctx.values.org, "--org"), livemode };
}

export const refundsCommands: Commands = {
  "refunds set-policy": {
    usage: "refunds set-policy --org ID --env test|live --shortfall receivable|refuse [--reason TEXT]   → {org_id, environment, shortfall_policy}",
    audit: {
      action: "refunds.set-policy",
      atomic: true,
      target: (ctx) => ({
        orgId: ctx.values.org ?? null,
        livemode: ctx.values.env === "live" ? true : ctx.values.env === "test" ? false : null,
        targetIds: ctx.values.org === undefined ? [] : [ctx.values.org],
        details: { shortfall_policy: ctx.values.shortfall ?? null },
      }),
    },
    async run(ctx) {
      const s = tenantOfArgs(ctx);
      const policy = SHORTFALL_POLICIES.find((p) => p === ctx.values.shortfall);
      if (policy === undefined) throw new Error(`--shortfall must be one of ${SHORTFALL_POLICIES.join(", ")}`);
      await setShortfallPolicy(ctx.q, s, policy);
      return { org_id: s.orgId, environment: s.env, shortfall_policy: await shortfallPolicy(ctx.q, s) };
    },
  },
  "refunds get-policy": {
    usage: "refunds get-policy --org ID --env test|live   → {org_id, environment, shortfall_policy}",
    async run(ctx) {
      const s = tenantOfArgs(ctx);
      return { org_id: s.orgId, environment: s.env, shortfall_policy: await shortfallPolicy(ctx.sql, s) };
    },
  },
};
