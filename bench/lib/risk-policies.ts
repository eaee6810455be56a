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
  pacedWithout: OpRun;
  pacedWith: OpRun;
}

/** The rounds' medians: throughput with ten policies over without (max rate), and the p99 they add at one offered rate. */
export function riskSummary(rounds: readonly RiskRound[]): { throughputRatio: number; p99AddedMs: number; lines: string[] } {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const lines = rounds.map(
    (r, i) =>
      `${String(i + 1).padStart(5)} ${r.without.perSec.toFixed(1).padStart(12)} ${r.with.perSec.toFixed(1).padStart(10)} ${(r.with.perSec / r.without.perSec).toFixed(3).padStart(7)}` +
      ` ${r.pacedWithout.p99.toFixed(1).padStart(14)} ${r.pacedWith.p99.toFixed(1).padStart(11)} ${(r.pacedWith.p99 - r.pacedWithout.p99).toFixed(1).padStart(9)}`,
  );
  return {
    throughputRatio: median(rounds.map((r) => r.with.perSec / r.without.perSec)),
    p99AddedMs: median(rounds.map((r) => r.pacedWith.p99 - r.pacedWithout.p99)),
    lines: ["round  max without  max with   ratio  p99 without ms  p99 with ms  added ms", ...lines],
  };
}
