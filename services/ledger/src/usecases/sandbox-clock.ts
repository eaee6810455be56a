/**
 * The sandbox test clock (wire-decisions §8): an org reads its sandbox's time and moves it forward, never back.
 * Every time-driven rule of that sandbox (hold auto-release, reserve release, payout schedules, …) reads it
 * through the kit's clock, and the jobs that wake on it run what became due within seconds.
 */
import { DomainError, schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";

type AdvanceBody = z.output<typeof schemas.SandboxClockAdvanceBody>;
export type SandboxClockDeps = Pick<LedgerDeps, "sandboxClocks" | "now">;

function sandboxOnly(tenant: Tenant, operation: string): void {
  if (tenant.livemode) throw new DomainError("sandbox_only", undefined, { hint: `Use a test key (slk_test_…) for ${operation}; live runs on real time` });
}

/** Real time: what live runs on (the clock's now for a live tenant). */
function realNow(deps: Pick<LedgerDeps, "now">, orgId: string): Date {
  return deps.now({ orgId, livemode: true });
}

function presentClock(real: Date, advancedSeconds: number): Record<string, unknown> {
  return { now: new Date(real.getTime() + advancedSeconds * 1000).toISOString(), advanced_by_seconds: advancedSeconds };
}

/** Errors: sandbox_only. */
export async function getSandboxClock(deps: SandboxClockDeps, tenant: Tenant) {
  sandboxOnly(tenant, "GET /v1/sandbox/clock");
  const advanced = await deps.sandboxClocks.advancedSeconds(tenant.orgId);
  return { clock: presentClock(realNow(deps, tenant.orgId), advanced) };
}

/**
 * Moves the org's sandbox clock forward by `by_seconds`, or to `to` (whole seconds, rounded up so the clock
 * reaches it). The advance and its `sandbox_clock.advanced` event are one transaction.
 * Errors: sandbox_only, clock_backwards (`to` before the clock's now), validation_error (`to` more than ten years
 * ahead of the clock).
 */
export async function advanceSandboxClock(deps: SandboxClockDeps, tenant: Tenant, body: AdvanceBody) {
  sandboxOnly(tenant, "POST /v1/sandbox/clock/advance");
  const real = realNow(deps, tenant.orgId);
  const next = (current: number): number => {
    if (body.by_seconds !== undefined) return current + body.by_seconds;
    const to = new Date(body.to ?? "");
    const clockNow = real.getTime() + current * 1000;
    if (to.getTime() < clockNow) {
      throw new DomainError("clock_backwards", `The sandbox clock is at ${new Date(clockNow).toISOString()}; ${to.toISOString()} is before it`, {
        extra: { clock: presentClock(real, current) },
      });
    }
    if (to.getTime() - clockNow > schemas.CLOCK_ADVANCE_MAX_SECONDS * 1000) {
      throw new DomainError("validation_error", "to is more than ten years ahead of the sandbox clock", {
        details: [{ path: "to", message: `must be at most ${schemas.CLOCK_ADVANCE_MAX_SECONDS} seconds ahead of the clock` }],
      });
    }
    return Math.max(current, Math.ceil((to.getTime() - real.getTime()) / 1000));
  };
  const advanced = await deps.sandboxClocks.advance(tenant.orgId, next, (seconds) => ({
    org_id: tenant.orgId,
    ...presentClock(real, seconds),
  }));
  return { clock: presentClock(real, advanced) };
}
