/**
 * What `bench:checkout` puts on its second org to measure what risk adds to a checkout: ten enabled policies that
 * apply to checkouts, of the kinds a marketplace runs (amount limits, velocity by participant and by org, with counts
 * and amounts), with limits no flow reaches, so every evaluation reads and writes its counters and allows.
 */
import type { OpRun } from "../lib.ts";

const HOUR = 3_600;

export const TEN_CHECKOUT_POLICIES: readonly Record<string, unknown>[] = [
  ...[1, 2, 3, 4, 5].map((i) => ({
    policy_type: "amount_limit",
    config: { max_amount_cents: 50_000_000 + i },
    severity: "hard",
    priority: i,
    applies_to: ["checkout"],
  })),
  {
    policy_type: "velocity",
    config: { subject: "participant", max_count: 1_000_000, window_seconds: HOUR },
    severity: "hard",
    priority: 6,
    applies_to: ["checkout"],
  },
  {
    policy_type: "velocity",
    config: { subject: "participant", max_amount_cents: 100_000_000_000, window_seconds: 24 * HOUR },
    severity: "soft",
    priority: 7,
    applies_to: ["checkout"],
  },
  { policy_type: "velocity", config: { subject: "org", max_count: 1_000_000, window_seconds: HOUR }, severity: "hard", priority: 8, applies_to: ["checkout"] },
  {
    policy_type: "velocity",
    config: { subject: "org", max_amount_cents: 100_000_000_000, window_seconds: 24 * HOUR },
    severity: "soft",
    priority: 9,
    applies_to: ["checkout"],
  },
  {
    policy_type: "velocity",
    config: { subject: "participant", max_count: 1_000_000, window_seconds: 60 },
    severity: "soft",
    priority: 10,
    applies_to: ["checkout"],
  },
];

export interface RiskRound {
  without: OpRun;
  with: OpRun;
  withoutAgain: OpRun;
  pacedWithout: OpRun;
  pacedWith: OpRun;
  pacedWithoutAgain: OpRun;
}

export interface RiskSummary {
  /** Median over rounds of the run with ÷ the mean of the two runs without around it. */
  throughputRatio: number;
  /** Median over rounds of the p99 with − the mean p99 of the two runs without around it. */
  p99AddedMs: number;
  /** Median over rounds of how far apart the two identical runs without land: |b ÷ a − 1| and |p99 b − p99 a|. */
  throughputNoise: number;
  p99NoiseMs: number;
  lines: string[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const meanOf = (a: number, b: number) => (a + b) / 2;

/** The rounds' medians: throughput with ten policies over without (max rate), the p99 they add at one offered rate, and the noise floor. */
export function riskSummary(rounds: readonly RiskRound[]): RiskSummary {
  const ratio = (r: RiskRound) => r.with.perSec / meanOf(r.without.perSec, r.withoutAgain.perSec);
  const added = (r: RiskRound) => r.pacedWith.p99 - meanOf(r.pacedWithout.p99, r.pacedWithoutAgain.p99);
  const n = (x: number, w: number, d = 1) => x.toFixed(d).padStart(w);
  const lines = rounds.map(
    (r, i) =>
      `${String(i + 1).padStart(5)} ${n(r.without.perSec, 12)} ${n(r.with.perSec, 9)} ${n(r.withoutAgain.perSec, 13)} ${n(ratio(r), 7, 3)}` +
      ` ${n(r.pacedWithout.p99, 12)} ${n(r.pacedWith.p99, 10)} ${n(r.pacedWithoutAgain.p99, 14)} ${n(added(r), 9)}`,
  );
  return {
    throughputRatio: median(rounds.map(ratio)),
    p99AddedMs: median(rounds.map(added)),
    throughputNoise: median(rounds.map((r) => Math.abs(r.withoutAgain.perSec / r.without.perSec - 1))),
    p99NoiseMs: median(rounds.map((r) => Math.abs(r.pacedWithoutAgain.p99 - r.pacedWithout.p99))),
    lines: ["round  max without  max with  max without'   ratio  p99 without  p99 with  p99 without'  added ms", ...lines],
  };
}
