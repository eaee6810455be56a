/**
 * `npm test` first runs scripts/ensure-system-deps.sh: with every server program present it says so and goes
 * on; a user who cannot install (not root) and lacks PostgreSQL or nats-server is told exactly what to install
 * and the run stops. The missing case runs as `nobody` with the binaries hidden (without-servers.ts), so it
 * needs root and `unshare` (skipped elsewhere).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "@treasury/testing";
import { canHideServers, runWithoutServers } from "./without-servers.ts";

const script = join(repoRoot(), "scripts", "ensure-system-deps.sh");

/** The environment with no running servers named, so the script looks for the programs. */
function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ["TEST_DATABASE_URL", "TEST_NATS_URL", "TEST_REDIS_URL"]) delete e[k];
  return e;
}

describe("ensure-system-deps", () => {
  it("says every program is there and succeeds when they are", () => {
    // The test run itself got past this script, so everything it checks is installed by now.
    const res = spawnSync("bash", [script], { env: env(), encoding: "utf8", timeout: 30_000 });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toContain("system deps: ok");
  });

  const canRunAsNobody = canHideServers && spawnSync("id", ["nobody"]).status === 0;
  it.runIf(canRunAsNobody)("tells a user who cannot install exactly what to install, and fails", () => {
    // The outer shell (root) opens the script, so `nobody` needs no access to the checkout.
    const res = runWithoutServers(`exec setpriv --reuid=nobody --regid=nogroup --clear-groups bash -s < ${script}`, {
      cwd: "/",
      env: env(),
      timeoutMs: 30_000,
    });
    expect(res.status, res.stdout + res.stderr).toBe(1);
    expect(res.stderr).toMatch(/system deps: missing postgresql nats-server\b/);
    expect(res.stderr).toMatch(/sudo apt-get install -y --no-install-recommends postgresql nats-server\b/);
    expect(res.stderr).toContain("TEST_DATABASE_URL / TEST_NATS_URL / TEST_REDIS_URL");
  });
});
