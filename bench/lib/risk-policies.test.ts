// The risk rounds' summary: the run with policies against the mean of the two identical runs without around it,
// and how far apart those two land (the noise floor the targets are read against).
import { describe, expect, it } from "vitest";
import type { OpRun } from "../lib.ts";
import { riskSummary, type RiskRound } from "./risk-policies.ts";

const run = (perSec: number, p99: number): OpRun => ({ concurrency: 0, count: 100, errors: 0, perSec, p50: p99 / 2, p99 });

function round(without: number, withPolicies: number, again: number, p99s: [number, number, number]): RiskRound {
  return {
    without: run(without, 0),
    with: run(withPolicies, 0),
    withoutAgain: run(again, 0),
    pacedWithout: run(0, p99s[0]),
    pacedWith: run(0, p99s[1]),
    pacedWithoutAgain: run(0, p99s[2]),
  };
}

describe("riskSummary", () => {
  it("compares with policies to the mean of the runs without around it and takes medians over rounds", () => {
    const s = riskSummary([round(100, 90, 80, [50, 60, 40]), round(100, 95, 100, [50, 52, 50]), round(200, 100, 200, [10, 100, 30])]);
    // Ratios 90/90 = 1, 95/100 = 0.95, 100/200 = 0.5; added 60-45 = 15, 52-50 = 2, 100-20 = 80.
    expect(s.throughputRatio).toBeCloseTo(0.95);
    expect(s.p99AddedMs).toBeCloseTo(15);
    // Noise: |80/100-1| = 0.2, 0, 0; |40-50| = 10, 0, 20.
    expect(s.throughputNoise).toBeCloseTo(0);
    expect(s.p99NoiseMs).toBeCloseTo(10);
    expect(s.lines).toHaveLength(4);
  });
});
