/**
 * The auto-release job (usecases/auto-release.ts): a leader job of the kit, so one replica runs it at a time, every
 * few seconds and at once when an org's sandbox clock moves (what the advance made due is released within seconds).
 */
import type { Job, Service } from "@treasury/service-kit";
import { releaseDueHolds, type AutoReleaseDeps } from "../usecases/auto-release.ts";

/** Between two passes when nothing woke the job: how late, at most, a live hold is released after hold_until. */
export const AUTO_RELEASE_INTERVAL_MS = 3_000;

export function registerAutoReleaseJob(
  svc: Pick<Service, "every" | "clock" | "log">,
  deps: AutoReleaseDeps,
  intervalMs = AUTO_RELEASE_INTERVAL_MS,
): Job<number> {
  // Real time is the clock's live time; each sandbox's advance comes from the kit's copy of the clocks.
  const clock = { realNow: () => svc.clock.now({ orgId: "", livemode: true }), advanced: () => svc.clock.advanced() };
  return svc.every({
    name: "hold-auto-release",
    intervalMs,
    leader: true,
    wakeOnClock: true,
    run: async (_leader, signal) => {
      let released = 0;
      for (;;) {
        const pass = await releaseDueHolds(deps, clock, signal);
        released += pass.released;
        if (pass.failed > 0)
          svc.log.warn({ err: pass.error, failed: pass.failed }, "auto-release: some due holds were not released; the next pass retries them");
        if (!pass.more || pass.released === 0 || signal.aborted) break;
      }
      if (released > 0) svc.log.info({ released }, "auto-release: released due holds");
      return released;
    },
  });
}
