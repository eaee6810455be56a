import { describe, expect, it } from "vitest";
import { federalSettings, meetsThreshold } from "./thresholds.ts";

describe("federal thresholds", () => {
  it("1099-K: over $20,000 and more than 200 transactions, both", () => {
    // Proves the strict inequalities of §6050W(e) and that one condition alone is not enough.
    const k = federalSettings(2025);
    expect(meetsThreshold(k, 2_000_001, 0, 201)).toBe(true);
    expect(meetsThreshold(k, 2_000_000, 0, 500)).toBe(false);
    expect(meetsThreshold(k, 9_000_000, 0, 200)).toBe(false);
  });

  it("1099-NEC: $600 through 2025, $2,000 from 2026, on what was paid net of refunds", () => {
    // Proves the year switch of P.L. 119-21 and that refunds count against the amount paid.
    expect(federalSettings(2025, "1099-NEC").thresholdCents).toBe(60_000);
    expect(federalSettings(2026, "1099-NEC").thresholdCents).toBe(200_000);
    const nec = federalSettings(2025, "1099-NEC");
    expect(meetsThreshold(nec, 60_000, 0, 1)).toBe(true);
    expect(meetsThreshold(nec, 70_000, 10_001, 1)).toBe(false);
  });
});
