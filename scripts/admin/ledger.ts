/** Ledger checks for operators (read-only). */
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import type { Commands } from "./command.ts";

export const ledgerCommands: Commands = {
  "ledger verify": {
    usage: "ledger verify [--org ID]   → {ok, violations}; exits 1 when any invariant is violated",
    async run(ctx) {
      const report = await checkInvariants(ctx.sql, ctx.values.org ? { orgId: ctx.values.org } : {});
      if (!report.ok) process.exitCode = 1;
      return report;
    },
  },
};
