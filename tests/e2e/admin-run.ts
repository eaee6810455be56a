/**
 * The operator CLI as an operator runs it: a subprocess connecting to this test's NATS as the `admin` identity
 * (the permission matrix lets it call only the services' admin operations), and a client for `find` in-process.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { parseNatsUrl } from "@treasury/service-kit";
import { repoRoot, withNatsCredentials, type TestEnv } from "@treasury/testing";
import { AdminClient } from "@treasury/service-kit/operator-client";

const run = promisify(execFile);
type Json = Record<string, unknown>;

/** The `admin` identity's URL; the superuser's on a server without authorization. */
export function adminNatsUrl(env: TestEnv): string {
  const creds = env.natsCredentials("admin");
  return creds === undefined ? env.natsUrl : withNatsCredentials(parseNatsUrl(env.natsUrl).server, creds.user, creds.password);
}

/** `npm run admin -- …args`: its JSON answer, or its exit code and the JSON error it printed last on stderr. */
export async function admin(env: TestEnv, ...args: string[]): Promise<{ code: number; out: Json; err: Json }> {
  try {
    const { stdout } = await run("node", ["--import", "tsx", "scripts/admin.ts", ...args], {
      cwd: repoRoot(),
      env: { ...process.env, NATS_URL: adminNatsUrl(env), NATS_PREFIX: env.prefix },
    });
    return { code: 0, out: JSON.parse(stdout) as Json, err: {} };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    const last = x.stderr.trim().split("\n").at(-1) ?? "";
    return { code: x.code, out: x.stdout ? (JSON.parse(x.stdout) as Json) : {}, err: last.startsWith("{") ? (JSON.parse(last) as Json) : { error: last } };
  }
}

/** The CLI's client, for calling `find` in-process; close it after. */
export function adminClient(env: TestEnv): Promise<AdminClient> {
  return AdminClient.connect(adminNatsUrl(env), env.prefix);
}
