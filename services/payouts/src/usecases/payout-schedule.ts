/**
 * Setting and reading a participant's payout schedule. The next run is computed from the tenant's clock (the
 * sandbox clock in sandbox), so an advanced sandbox sees the run it would see that day. A participant without a
 * schedule is paid out by hand only (`manual`).
 *
 * Errors: validation_error, participant_not_found, service_unavailable (the ledger did not answer).
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { nextRunAfter } from "../domain/schedule.ts";
import type { PayoutsDeps } from "./deps.ts";
import type { ScheduleValues } from "./ports.ts";

type PayoutScheduleBody = z.output<typeof schemas.PayoutScheduleBody>;

export function presentSchedule(s: ScheduleValues): Record<string, unknown> {
  return {
    interval: s.interval,
    weekly_anchor: s.weekly_anchor,
    monthly_anchor: s.monthly_anchor,
    delay_days: s.delay_days,
    minimum_amount_cents: s.minimum_amount_cents,
    next_run_at: s.next_run_at?.toISOString() ?? null,
  };
}

const MANUAL: ScheduleValues = { interval: "manual", weekly_anchor: null, monthly_anchor: null, delay_days: 0, minimum_amount_cents: 0, next_run_at: null };

export async function putPayoutSchedule(
  deps: Pick<PayoutsDeps, "ledger" | "schedules" | "clock">,
  tenant: Tenant,
  participantId: string,
  body: PayoutScheduleBody,
) {
  // The participant must exist (participant_not_found otherwise): a schedule of nobody would run for ever.
  await deps.ledger.getParticipant(tenant, participantId);
  // The next run counts from the clock as the ledger has it now: an advance just made may not have reached
  // this service's copy yet, and a schedule set after it must not be due already.
  if (!tenant.livemode) deps.clock.sync(tenant.orgId, await deps.ledger.sandboxAdvance(tenant));
  const timing = { interval: body.interval, weekly_anchor: body.weekly_anchor ?? null, monthly_anchor: body.monthly_anchor ?? null };
  const saved = await deps.schedules.save(tenant, participantId, {
    ...timing,
    delay_days: body.delay_days ?? 0,
    minimum_amount_cents: body.minimum_amount_cents ?? 0,
    next_run_at: nextRunAfter(timing, deps.clock.now(tenant)),
  });
  return { payout_schedule: presentSchedule(saved) };
}

export async function getPayoutSchedule(deps: Pick<PayoutsDeps, "ledger" | "schedules">, tenant: Tenant, participantId: string) {
  const row = await deps.schedules.find(tenant, participantId);
  if (row === undefined) await deps.ledger.getParticipant(tenant, participantId);
  return { payout_schedule: presentSchedule(row ?? MANUAL) };
}
