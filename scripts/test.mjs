// `npm test`: system deps → typecheck + lint + format check (fail fast) → vitest; exits with vitest's code and ends with a
// plain "N passed, N failed, N skipped" line. Extra arguments go to vitest (`npm test -- libs/testing`).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const reportFile = join(root, ".data", "vitest-report.json");

function step(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: root, stdio: "inherit" });
  if (res.error) {
    console.error(`test: could not run ${cmd}: ${res.error.message}`);
    return 1;
  }
  return res.status ?? 1;
}

const deps = step("bash", [join(root, "scripts", "ensure-system-deps.sh")]);
if (deps !== 0) process.exit(deps);

// TEST_SKIP_CHECKS=1 skips typecheck and lint while iterating on tests; CI never sets it.
// The workspaces through turbo (cached), then the root's own TypeScript: scripts, tests, benchmarks.
const checks =
  process.env.TEST_SKIP_CHECKS === "1"
    ? 0
    : step("npx", ["turbo", "run", "typecheck", "lint"]) ||
      step("npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]) ||
      step("npx", ["eslint", "scripts", "tests", "bench"]) ||
      step("npx", ["prettier", "--check", "--log-level", "warn", "."]);
if (checks !== 0) {
  console.error("test: typecheck/lint failed; tests not run");
  process.exit(checks);
}

mkdirSync(dirname(reportFile), { recursive: true });
rmSync(reportFile, { force: true });
const code = step("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${reportFile}`, ...process.argv.slice(2)]);

if (existsSync(reportFile)) {
  const report = JSON.parse(readFileSync(reportFile, "utf8"));
  const passed = report.numPassedTests ?? 0;
  // Suites that failed to load (syntax, import, hook errors) count as failures too: a broken file is not a pass.
  const failedSuites = (report.testResults ?? []).filter((f) => f.status === "failed" && (f.assertionResults ?? []).length === 0).length;
  const failed = (report.numFailedTests ?? 0) + failedSuites;
  // Skipped, todo and (in the report's words) pending tests ran no assertion: they are neither passes nor hidden.
  const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
} else {
  console.log("0 passed, 0 failed, 0 skipped (vitest wrote no report)");
}
process.exit(code);
