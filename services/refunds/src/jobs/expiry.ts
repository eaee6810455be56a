/**
 * The refund request expiry job (usecases/expire-requests.ts): a leader job of the kit, so one replica runs it at
 * a time, every REFUNDS_EXPIRY_INTERVAL_MS and at once when an org's sandbox clock moves (what the advance made
 * due expires within seconds). The service follows the ledger's advances in its own copy of the clocks.
 */
import type { Job, Service } from "@treasury/service-kit";
import type { RefundsDeps } from "../usecases/deps.ts";
import { expireDueRequests } from "../usecases/expire-requests.ts";

export function registerExpiryJob(
  svc: Pick<Service, "every" | "clock" | "log">,
  deps: Pick<RefundsDeps, "store">,
  opts: { intervalMs: number; batchMax: number },
): Job<number> {
  // Real time is the clock's live time; each sandbox's advance comes from the kit's copy of the clocks.
  const clock = { realNow: () => svc.clock.now({ orgId: "", livemode: true }), advanced: () => svc.clock.advanced() };
  return svc.every({
    name: "refund-request-expiry",
    intervalMs: opts.intervalMs,
    leader: true,
    wakeOnClock: true,
    run: async (_leader, signal) => {
      const expired = await expireDueRequests(deps, clock, { batchMax: opts.batchMax, signal });
      if (expired > 0) svc.log.info({ expired }, "refund requests expired unreviewed");
      return expired;
    },
  });
}
