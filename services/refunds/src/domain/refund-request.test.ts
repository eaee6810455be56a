// Proves the expiry rule of a refund request: its deadline is its org's now plus the time to live in whole days,
// only a request still waiting for a review is due, at its deadline and after, and expiring it cancels it by the
// schedule with the reason `expired`.
import { describe, expect, it } from "vitest";
import { expiresAtOf, expiryFields, isDue } from "./refund-request.ts";

const T0 = new Date("2026-03-01T12:00:00.000Z");
const DAY_MS = 86_400_000;

describe("refund request expiry", () => {
  it("expires the time to live after its org's now, in whole days", () => {
    expect(expiresAtOf(T0, 30).toISOString()).toBe("2026-03-31T12:00:00.000Z");
    expect(expiresAtOf(T0, 1).getTime() - T0.getTime()).toBe(DAY_MS);
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => expiresAtOf(T0, bad)).toThrow(/whole number of days/);
  });

  it("is due at its deadline and after, and only while created", () => {
    const expires_at = expiresAtOf(T0, 30);
    expect(isDue({ status: "created", expires_at }, new Date(expires_at.getTime() - 1))).toBe(false);
    expect(isDue({ status: "created", expires_at }, expires_at)).toBe(true);
    expect(isDue({ status: "created", expires_at }, new Date(expires_at.getTime() + 31 * DAY_MS))).toBe(true);
    for (const status of ["processing", "completed", "rejected", "cancelled", "failed"] as const) {
      expect(isDue({ status, expires_at }, new Date(expires_at.getTime() + DAY_MS)), status).toBe(false);
    }
  });

  it("cancels by the schedule with the reason expired, at the time given", () => {
    const at = new Date("2026-04-01T00:00:00.000Z");
    expect(expiryFields(at)).toEqual({ status: "cancelled", cancelled_by: "schedule", cancellation_reason: "expired", cancelled_at: at });
  });
});
