import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
/** Old-space ceiling for the probe process: parsing a 1 MiB statement of any format must fit in it. */
const OLD_SPACE_MB = 48;

interface Probe {
  input_bytes: number;
  transactions: number;
  parsed: number;
  grown_bytes: number;
  retained_bytes: number;
}

describe("bounded memory", () => {
  it("a generated ~1 MiB statement of every format parses in a 48 MiB old space; its result holds under 10× the input and the line count is exact", () => {
    // Proves the readers do not build trees or strings quadratic in the input: a run over the ceiling dies instead of passing.
    const run = spawnSync(
      process.execPath,
      ["--expose-gc", `--max-old-space-size=${OLD_SPACE_MB}`, "--import", "tsx", join(here, "testing", "memory-probe.ts"), String(1 << 20)],
      { encoding: "utf8", timeout: 120_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const probes = JSON.parse(run.stdout) as Record<string, Probe>;
    expect(Object.keys(probes)).toEqual(["ofx", "camt053", "bai2", "mt940", "csv"]);
    for (const [format, p] of Object.entries(probes)) {
      expect([format, p.parsed]).toEqual([format, p.transactions]);
      expect(p.input_bytes).toBeGreaterThanOrEqual(1 << 20);
      // What the result keeps alive: the transactions themselves (a few hundred bytes each).
      expect([format, p.retained_bytes < 10 * p.input_bytes]).toEqual([format, true]);
      // Heap grown before any collection, so parse garbage included: generous, but linear.
      expect([format, p.grown_bytes < 40 * p.input_bytes]).toEqual([format, true]);
    }
  }, 120_000);
});
