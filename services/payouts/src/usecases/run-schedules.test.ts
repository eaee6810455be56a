// Payout schedules with fakes behind their ports: setting one computes its next run from the tenant's clock; a
// due run pays the payable balance once per period (raced, repeated, or after a crash), limited by delay_days,
// skipped below the minimum or when a live participant is not eligible (recorded, with payout.skipped).
import { DomainError, tenantOf, type Tenant } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { fakes, posted, type Fakes } from "../../test/fakes.ts";
import { getPayoutSchedule, putPayoutSchedule } from "./payout-schedule.ts";
import { requestPayout } from "./request-payout.ts";
import { runDueSchedules } from "./run-schedules.ts";

const SANDBOX: Tenant = tenantOf({ org_id: "org_a", livemode: false });
const LIVE: Tenant = tenantOf({ org_id: "org_a", livemode: true });
const DAY_S = 86_400;
const OPTS = { batchMax: 2, leaseMs: 60_000 };

/** A ledger whose payouts leave the wallet as entries (so balances and history follow them). */
function withCreator(f: Fakes, balance: number, at = new Date(Date.UTC(2026, 10, 1))): void {
  f.ledger.addCreator("creator_1", 0);
  if (balance > 0) f.ledger.record("creator_1", "sale", "sale_1", [balance], at);
  f.ledger.answer = (req) => {
    if (req.kind === "payout") f.ledger.record("creator_1", "payout", req.reference_id, [-(req.amount ?? 0)], f.clock.base);
    return posted(req, undefined);
  };
}

describe("setting a schedule", () => {
  it("answers manual with no next run when unset, and the next anchor day on the tenant's clock once set", async () => {
    const f = fakes();
    withCreator(f, 0);
    expect((await getPayoutSchedule(f.deps, SANDBOX, "creator_1")).payout_schedule).toEqual({
      interval: "manual",
      weekly_anchor: null,
      monthly_anchor: null,
      delay_days: 0,
      minimum_amount_cents: 0,
      next_run_at: null,
    });
    // The sandbox runs ten days ahead: 2026-11-27 12:00 + 10 days is Monday 2026-12-07; the next Friday is the 11th.
    f.clock.ahead.set("org_a", 10 * DAY_S);
    const set = await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "weekly", weekly_anchor: "friday", minimum_amount_cents: 100 });
    expect(set.payout_schedule).toMatchObject({ interval: "weekly", weekly_anchor: "friday", delay_days: 0, next_run_at: "2026-12-11T00:00:00.000Z" });
    // Live runs on real time.
    const live = await putPayoutSchedule(f.deps, LIVE, "creator_1", { interval: "monthly", monthly_anchor: 31 });
    expect(live.payout_schedule["next_run_at"]).toBe("2026-11-30T00:00:00.000Z");
  });

  it("refuses an unknown participant", async () => {
    const f = fakes();
    await expect(putPayoutSchedule(f.deps, SANDBOX, "nobody", { interval: "daily" })).rejects.toMatchObject({ code: "participant_not_found" });
  });
});

describe("running schedules", () => {
  it("pays the balance once on the anchor day when runs race, then moves to the next week", async () => {
    const f = fakes();
    withCreator(f, 4200);
    await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "weekly", weekly_anchor: "friday" });
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 0, paid: 0, skipped: 0 });
    f.clock.ahead.set("org_a", 7 * DAY_S);
    const [a, b] = await Promise.all([runDueSchedules(f.deps, OPTS), runDueSchedules(f.deps, OPTS)]);
    expect(a.paid + b.paid).toBe(1);
    const payouts = [...f.payouts.rows.values()];
    expect(payouts.map((p) => [p.reference_id, p.amount, p.status])).toEqual([["schedule:creator_1:2026-W49", 4200, "paid"]]);
    expect((await getPayoutSchedule(f.deps, SANDBOX, "creator_1")).payout_schedule["next_run_at"]).toBe("2026-12-11T00:00:00.000Z");
    // Run again the same day: not due any more.
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 0, paid: 0, skipped: 0 });
    expect(f.payouts.rows.size).toBe(1);
  });

  it("a run after a crash between the payout and its record pays nothing more", async () => {
    const f = fakes();
    withCreator(f, 3000);
    await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "daily" });
    f.clock.ahead.set("org_a", DAY_S);
    // The crashed run's payout exists; the balance it left is now different (a new sale), so the body differs too.
    await requestPayout(f.deps, SANDBOX, { participant_id: "creator_1", amount: 3000, reference_id: "schedule:creator_1:2026-11-28" });
    f.ledger.record("creator_1", "sale", "sale_2", [500], f.clock.base);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 0, paid: 0, skipped: 0 });
    expect(f.payouts.rows.size).toBe(1);
    expect([...f.schedules.runs.values()]).toMatchObject([{ period: "2026-11-28", outcome: "paid", amount_cents: 3000 }]);
  });

  it("pays the payable balance (less reserves) when the ledger shows one", async () => {
    const f = fakes();
    withCreator(f, 5000);
    const p = f.ledger.participants.get("creator_1");
    if (p !== undefined) p.payable_balance_cents = 3500;
    await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "monthly", monthly_anchor: 1 });
    f.clock.ahead.set("org_a", 5 * DAY_S);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 1, paid: 1, skipped: 0 });
    expect([...f.payouts.rows.values()].map((r) => [r.reference_id, r.amount])).toEqual([["schedule:creator_1:2026-12", 3500]]);
  });

  it("pays no more than the wallet held delay_days ago", async () => {
    const f = fakes();
    withCreator(f, 2000, new Date(Date.UTC(2026, 10, 20)));
    await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "daily", delay_days: 3 });
    // A sale one day before the run is within the delay: it stays.
    f.ledger.record("creator_1", "sale", "sale_late", [900], new Date(Date.UTC(2026, 10, 27, 6)));
    f.clock.ahead.set("org_a", DAY_S);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 1, paid: 1, skipped: 0 });
    expect([...f.payouts.rows.values()].map((r) => r.amount)).toEqual([2000]);
  });

  it("records a skip below the minimum, once, with payout.skipped", async () => {
    const f = fakes();
    withCreator(f, 99);
    await putPayoutSchedule(f.deps, SANDBOX, "creator_1", { interval: "daily", minimum_amount_cents: 100 });
    f.clock.ahead.set("org_a", DAY_S);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 1, paid: 0, skipped: 1 });
    expect(f.payouts.rows.size).toBe(0);
    expect(f.schedules.events).toEqual([
      { type: "payout.skipped", org_id: "org_a", livemode: false, data: { participant_id: "creator_1", period: "2026-11-28", reason: "below_minimum" } },
    ]);
    expect((await getPayoutSchedule(f.deps, SANDBOX, "creator_1")).payout_schedule["next_run_at"]).toBe("2026-11-29T00:00:00.000Z");
  });

  it("a live schedule respects eligibility: a participant without KYC is skipped, not paid", async () => {
    const f = fakes();
    withCreator(f, 5000);
    await putPayoutSchedule(f.deps, LIVE, "creator_1", { interval: "daily" });
    // `--at`: as if it were the next day, for every tenant.
    const summary = await runDueSchedules(f.deps, { ...OPTS, at: new Date(Date.UTC(2026, 10, 28, 1)) });
    expect(summary).toEqual({ runs: 1, paid: 0, skipped: 1 });
    expect(f.payouts.rows.size).toBe(0);
    expect(f.schedules.events[0]?.data).toEqual({ participant_id: "creator_1", period: "2026-11-28", reason: "payout_not_eligible" });
  });

  it("runs every due schedule across batches; one that fails stays due for the next pass", async () => {
    const f = fakes();
    for (const id of ["c1", "c2", "c3"]) {
      f.ledger.addCreator(id, 0);
      f.ledger.record(id, "sale", `sale_${id}`, [1000], new Date(Date.UTC(2026, 10, 1)));
      await putPayoutSchedule(f.deps, SANDBOX, id, { interval: "daily" });
    }
    // The ledger does not answer about c2 this pass.
    const read = f.ledger.getParticipant;
    f.ledger.getParticipant = async (t, id) => {
      if (id === "c2") throw new DomainError("service_unavailable", "ledger unavailable");
      return read(t, id);
    };
    f.clock.ahead.set("org_a", DAY_S);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 2, paid: 2, skipped: 0 });
    expect((await getPayoutSchedule(f.deps, SANDBOX, "c2")).payout_schedule["next_run_at"]).toBe("2026-11-28T00:00:00.000Z");
    f.ledger.getParticipant = read;
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 1, paid: 1, skipped: 0 });
    expect([...f.payouts.rows.values()].map((r) => r.reference_id).sort()).toEqual([
      "schedule:c1:2026-11-28",
      "schedule:c2:2026-11-28",
      "schedule:c3:2026-11-28",
    ]);
  });

  it("reads each batch's balances in one ledger request and pays each creator its own balance", async () => {
    const f = fakes();
    for (const [id, balance] of [
      ["c1", 1000],
      ["c2", 2500],
      ["c3", 700],
    ] as const) {
      f.ledger.addCreator(id, 0);
      f.ledger.record(id, "sale", `sale_${id}`, [balance], new Date(Date.UTC(2026, 10, 1)));
      await putPayoutSchedule(f.deps, SANDBOX, id, { interval: "daily" });
    }
    const reads: string[][] = [];
    const read = f.ledger.participantBalances;
    f.ledger.participantBalances = async (t, ids) => {
      reads.push([...ids]);
      return read(t, ids);
    };
    f.clock.ahead.set("org_a", DAY_S);
    expect(await runDueSchedules(f.deps, OPTS)).toEqual({ runs: 3, paid: 3, skipped: 0 });
    expect(reads).toEqual([["c1", "c2"], ["c3"]]);
    expect([...f.payouts.rows.values()].map((r) => [r.reference_id, r.amount]).sort()).toEqual([
      ["schedule:c1:2026-11-28", 1000],
      ["schedule:c2:2026-11-28", 2500],
      ["schedule:c3:2026-11-28", 700],
    ]);
  });
});
