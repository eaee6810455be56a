import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FIELD_CHARS_MAX, NESTING_DEPTH_MAX } from "./core/limits.ts";
import { StatementError } from "./core/errors.ts";
import { parseCsvAmount } from "./csv/parse.ts";
import { parseStatement, type ParseOptions } from "./parse.ts";
import { pathologicalStatements } from "./testing/pathological.ts";

const here = dirname(fileURLToPath(import.meta.url));
const INPUT_BYTES = 1 << 20;
/**
 * What one 1 MiB input may take. Linear readers take tens of milliseconds on an idle machine; the quadratic ones
 * this guards against took from 20 seconds to 20 minutes, so the bound leaves room for a loaded machine.
 */
const INPUT_BUDGET_MS = 5_000;
/** The whole run, process start included; past it the probe is killed and what it had not printed fails. */
const RUN_TIMEOUT_MS = 60_000;

interface ProbeLine {
  name: string;
  format: string;
  input_bytes: number;
  ms: number;
  outcome: string;
}

describe("pathological input", () => {
  it(
    "a 1 MiB pathological statement of every format is read or refused within its budget",
    () => {
      // Proves no reader does work quadratic in its input: each result must arrive within the budget; a hang ends the run.
      const run = spawnSync(process.execPath, ["--import", "tsx", join(here, "testing", "pathological-probe.ts"), String(INPUT_BYTES)], {
        encoding: "utf8",
        timeout: RUN_TIMEOUT_MS,
      });
      const lines = run.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as ProbeLine);
      const expected = pathologicalStatements(INPUT_BYTES);
      expect(new Set(expected.map((p) => p.opts.format))).toEqual(new Set(["csv", "mt940", "ofx", "camt053", "bai2"]));
      expect(
        lines.map((l) => l.name),
        `unfinished after ${RUN_TIMEOUT_MS} ms: ${expected
          .slice(lines.length)
          .map((p) => p.name)
          .join(", ")}; ${run.stderr}`,
      ).toEqual(expected.map((p) => p.name));
      for (const l of lines) {
        expect(l.input_bytes).toBeGreaterThan(INPUT_BYTES - 1024);
        expect([l.name, l.outcome === "parsed" || l.outcome === "invalid_statement"]).toEqual([l.name, true]);
        expect([l.name, l.ms < INPUT_BUDGET_MS]).toEqual([l.name, true]);
      }
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});

const MT940 = (details: string) => `:20:X\n:25:NL26VAYB8060476890\n:60F:C240101EUR1,00\n:61:2401010101C1,00NTRFREF\n:86:${details}\n:62F:C240101EUR2,00\n-\n`;

function refusal(text: string, opts: ParseOptions): StatementError {
  try {
    parseStatement(text, opts);
  } catch (error) {
    if (error instanceof StatementError) return error;
    throw error;
  }
  throw new Error("expected a StatementError");
}

describe("limits and the code that replaced backtracking patterns", () => {
  it("reads what the patterns read: spaces before digits, slashes ending an MT940 value, a line separator in :61:", () => {
    // Proves the linear replacements keep the readings of the patterns they replaced.
    const syntax = { decimal_separator: ",", thousands_separator: " " } as const;
    expect(parseCsvAmount("1 234,50", syntax)).toEqual({ units: 123450n, scale: 2 });
    expect(parseCsvAmount("EUR  12,00", { decimal_separator: ",", thousands_separator: "" })).toEqual({ units: 1200n, scale: 2 });
    expect(parseCsvAmount("12,00 -", { decimal_separator: ",", thousands_separator: "" })).toEqual({ units: -1200n, scale: 2 });
    expect(parseCsvAmount("1 #", { decimal_separator: ".", thousands_separator: "" })).toBeNull();
    const txn = parseStatement(MT940("/EREF/E2E-1///NAME/ACME BV//REMI/Invoice 7///"), { format: "mt940" }).statements[0]?.transactions[0];
    expect(txn).toMatchObject({ description: "Invoice 7", counterparty: { name: "ACME BV" } });
    const text = MT940("x").replace("NTRFREF", "NTRFREF\u2028MORE");
    expect(parseStatement(text, { format: "mt940" }).statements[0]?.transactions[0]?.reference).toBe("REF\u2028MORE");
  });

  it("a field at the limit is read; one character more, or nesting past the limit, is an invalid_statement with its line", () => {
    // Proves the caps refuse with the library's error and place, and do not cut legitimate fields short.
    const atLimit = MT940(`/REMI/${"a".repeat(FIELD_CHARS_MAX - 6)}`);
    expect(parseStatement(atLimit, { format: "mt940" }).statements[0]?.transactions[0]?.description).toHaveLength(FIELD_CHARS_MAX - 6);
    const over = refusal(MT940(`/REMI/${"a".repeat(FIELD_CHARS_MAX - 5)}`), { format: "mt940" });
    expect([over.code, over.details]).toEqual(["invalid_statement", { line: 5, field: "86" }]);
    const cell = refusal(`Date,Amount,Memo\n2024-01-01,1.00,${"m".repeat(FIELD_CHARS_MAX + 1)}\n`, {
      format: "csv",
      mapping: { date: "Date", amount: "Amount", currency: "EUR" },
    });
    expect([cell.code, cell.details.line]).toEqual(["invalid_statement", 2]);
    const deep = `OFXHEADER:100\n\n<OFX>${"<A>".repeat(NESTING_DEPTH_MAX)}</OFX>`;
    expect(refusal(deep, { format: "ofx" }).message).toMatch(/nest deeper than 64/);
  });
});
