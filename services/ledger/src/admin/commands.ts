/**
 * The operator commands the ledger answers (ADMIN_COMMANDS of @treasury/contracts). `ledger verify` only reads,
 * so it writes no audit row.
 */
import { DomainError } from "@treasury/contracts";
import { flag, type Service } from "@treasury/service-kit";
import type { Sql } from "../store/db.ts";
import { verifyLedger } from "../verify/verify.ts";

export interface AdminCommandDeps {
  sql: Sql;
  /** Each statement of `ledger verify` is bounded like the periodic check's (LEDGER_VERIFY_TIMEOUT_MS). */
  verifyTimeoutMs: number;
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: AdminCommandDeps): void {
  svc.handleAdmin<{ orgId: string | undefined }>("ledger verify", {
    decode: (request) => {
      if (request.flags["org"] === true) throw new DomainError("validation_error", "--org needs an org id");
      return { orgId: flag(request, "org") || undefined };
    },
    // {ok, violations}: the CLI exits 1 when ok is false.
    run: async ({ input }) => ({
      ...(await verifyLedger(deps.sql, { ...(input.orgId === undefined ? {} : { orgId: input.orgId }), timeoutMs: deps.verifyTimeoutMs })),
    }),
  });
}
