/**
 * `admin payouts run-schedules [--at ISO]`: every payout schedule due at that time (default: each tenant's own
 * clock) runs now, once per period like the leader's pass. Each run opens its own transactions and calls the
 * ledger, so the command is recorded once its outcome is known, with the counts.
 */
import { DomainError } from "@treasury/contracts";
import { flag, type Service } from "@treasury/service-kit";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { runDueSchedules } from "../usecases/run-schedules.ts";

export interface RunSchedulesOptions {
  batchMax: number;
  leaseMs: number;
}

function atOf(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(t)) {
    throw new DomainError("validation_error", "--at must be an ISO time such as 2026-12-01T00:00:00Z", {
      details: [{ path: "at", message: "must be an ISO time" }],
    });
  }
  return new Date(t);
}

export function registerRunSchedules(svc: Pick<Service, "handleAdmin">, deps: PayoutsDeps, opts: RunSchedulesOptions): void {
  svc.handleAdmin<Date | undefined>("payouts run-schedules", {
    decode: (request) => atOf(flag(request, "at")),
    audit: {
      atomic: false,
      // Schedules span orgs and environments: the counts and the time say what ran.
      target: ({ input }, result) => ({ targetIds: [], details: { at: input?.toISOString() ?? null, ...(result ?? {}) } }),
    },
    run: async ({ input }) => ({ ...(await runDueSchedules(deps, { ...opts, at: input })) }),
  });
}
