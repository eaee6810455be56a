// When payout schedules run: next runs in UTC days (weekly on the anchor weekday, monthly on the anchor date or
// the last day of a shorter month) and the period keys their payouts' references carry.
import { describe, expect, it } from "vitest";
import { isoWeek, nextRunAfter, periodKey, runAtOrBefore, type ScheduleTiming } from "./schedule.ts";

const at = (iso: string) => new Date(iso);
const weekly = (anchor: ScheduleTiming["weekly_anchor"]): ScheduleTiming => ({ interval: "weekly", weekly_anchor: anchor, monthly_anchor: null });
const monthly = (anchor: number): ScheduleTiming => ({ interval: "monthly", weekly_anchor: null, monthly_anchor: anchor });
const daily: ScheduleTiming = { interval: "daily", weekly_anchor: null, monthly_anchor: null };

describe("next run", () => {
  it("manual never runs", () => {
    expect(nextRunAfter({ interval: "manual", weekly_anchor: null, monthly_anchor: null }, at("2026-11-27T12:00:00Z"))).toBeNull();
  });

  it("daily runs at the next UTC midnight", () => {
    expect(nextRunAfter(daily, at("2026-11-27T12:00:00Z"))?.toISOString()).toBe("2026-11-28T00:00:00.000Z");
    expect(nextRunAfter(daily, at("2026-12-31T23:59:59Z"))?.toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });

  it("weekly runs on the anchor weekday, strictly after now", () => {
    // 2026-11-27 is a Friday.
    expect(nextRunAfter(weekly("friday"), at("2026-11-27T12:00:00Z"))?.toISOString()).toBe("2026-12-04T00:00:00.000Z");
    expect(nextRunAfter(weekly("monday"), at("2026-11-27T12:00:00Z"))?.toISOString()).toBe("2026-11-30T00:00:00.000Z");
    expect(nextRunAfter(weekly("saturday"), at("2026-11-27T23:00:00Z"))?.toISOString()).toBe("2026-11-28T00:00:00.000Z");
    expect(nextRunAfter(weekly("sunday"), at("2026-11-29T00:00:00Z"))?.toISOString()).toBe("2026-12-06T00:00:00.000Z");
  });

  it("monthly runs on the anchor date, or the last day of a shorter month", () => {
    expect(nextRunAfter(monthly(15), at("2026-11-27T12:00:00Z"))?.toISOString()).toBe("2026-12-15T00:00:00.000Z");
    expect(nextRunAfter(monthly(31), at("2027-01-31T12:00:00Z"))?.toISOString()).toBe("2027-02-28T00:00:00.000Z");
    expect(nextRunAfter(monthly(31), at("2028-02-01T00:00:00Z"))?.toISOString()).toBe("2028-02-29T00:00:00.000Z");
    expect(nextRunAfter(monthly(31), at("2027-02-28T00:00:00Z"))?.toISOString()).toBe("2027-03-31T00:00:00.000Z");
    expect(nextRunAfter(monthly(30), at("2026-12-31T00:00:00Z"))?.toISOString()).toBe("2027-01-30T00:00:00.000Z");
  });

  it("the run a time belongs to is the latest at or before it", () => {
    expect(runAtOrBefore(weekly("friday"), at("2026-11-30T08:00:00Z"))?.toISOString()).toBe("2026-11-27T00:00:00.000Z");
    expect(runAtOrBefore(monthly(31), at("2027-03-05T00:00:00Z"))?.toISOString()).toBe("2027-02-28T00:00:00.000Z");
    expect(runAtOrBefore(monthly(5), at("2027-03-05T00:00:00Z"))?.toISOString()).toBe("2027-03-05T00:00:00.000Z");
  });
});

describe("period keys", () => {
  it("daily YYYY-MM-DD, monthly YYYY-MM, weekly the ISO week", () => {
    expect(periodKey("daily", at("2026-11-27T00:00:00Z"))).toBe("2026-11-27");
    expect(periodKey("monthly", at("2026-11-30T00:00:00Z"))).toBe("2026-11");
    expect(periodKey("weekly", at("2026-11-27T00:00:00Z"))).toBe("2026-W48");
  });

  it("ISO weeks at year ends belong to the year of their Thursday", () => {
    expect(isoWeek(at("2027-01-01T00:00:00Z"))).toBe("2026-W53");
    expect(isoWeek(at("2024-12-30T00:00:00Z"))).toBe("2025-W01");
    expect(isoWeek(at("2026-01-01T00:00:00Z"))).toBe("2026-W01");
    expect(isoWeek(at("2021-01-03T00:00:00Z"))).toBe("2020-W53");
  });
});
