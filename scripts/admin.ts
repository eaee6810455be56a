/**
 * Operator CLI (not the public API). Output is JSON on stdout; errors go to stderr with a non-zero exit.
 *   org create --name NAME                         → {org_id}
 *   org suspend|activate --org ID
 *   key create --org ID --env test|live [--scopes read,payments] [--force-unverified]   → {api_key, key_id}
 *   key revoke --key-id ID
 *   maintenance on [--retry-after SECONDS] [--message TEXT] | maintenance off
 *   ledger verify [--org ID]                       → {ok, violations}; exits 1 when any invariant is violated
 * Connects with DATABASE_URL (an admin URL), else the dev stack's database (.data/dev-stack.json, or under
 * DEV_DATA_DIR as `npm start` uses it).
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { createApiKey, createOrg, parseScopes, revokeApiKey, setMaintenance, setOrgStatus } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/invariants.ts";

function databaseUrl(): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const file = process.env.DEV_DATA_DIR ? resolve(process.env.DEV_DATA_DIR, "dev-stack.json") : new URL("../.data/dev-stack.json", import.meta.url);
  if (existsSync(file)) {
    const stack = JSON.parse(readFileSync(file, "utf8")) as { database_url?: string };
    if (stack.database_url) return stack.database_url;
  }
  throw new Error("set DATABASE_URL (admin connection URL) or start the dev stack with `npm start` first");
}

function need(v: string | undefined, flag: string): string {
  if (!v) throw new Error(`missing ${flag}`);
  return v;
}

async function run(argv: string[]): Promise<unknown> {
  const [group, action, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: "string" },
      org: { type: "string" },
      env: { type: "string" },
      scopes: { type: "string" },
      "key-id": { type: "string" },
      "force-unverified": { type: "boolean" },
      "retry-after": { type: "string" },
      message: { type: "string" },
    },
    strict: true,
  });
  const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {} });
  try {
    switch (`${group} ${action}`) {
      case "org create":
        return await createOrg(sql, { name: need(values.name, "--name") });
      case "org suspend":
      case "org activate": {
        const org = need(values.org, "--org");
        await setOrgStatus(sql, org, action === "suspend" ? "suspended" : "active");
        return { org_id: org, status: action === "suspend" ? "suspended" : "active" };
      }
      case "key create": {
        const env = need(values.env, "--env");
        if (env !== "test" && env !== "live") throw new Error("--env must be test or live");
        return await createApiKey(sql, {
          orgId: need(values.org, "--org"),
          environment: env === "live" ? "live" : "sandbox",
          scopes: parseScopes(values.scopes),
          forceUnverified: values["force-unverified"] === true,
        });
      }
      case "key revoke": {
        const keyId = need(values["key-id"], "--key-id");
        await revokeApiKey(sql, keyId);
        return { key_id: keyId, revoked: true };
      }
      case "maintenance on":
      case "maintenance off": {
        const retryAfter = Number(values["retry-after"] ?? 60);
        if (!Number.isInteger(retryAfter) || retryAfter < 1 || retryAfter > 86_400) throw new Error("--retry-after must be 1–86400 seconds");
        const setting = { enabled: action === "on", retry_after_s: retryAfter, message: values.message ?? "" };
        await setMaintenance(sql, setting);
        return { maintenance: setting };
      }
      case "ledger verify": {
        const report = await checkInvariants(sql, values.org ? { orgId: values.org } : {});
        if (!report.ok) process.exitCode = 1;
        return report;
      }
      default:
        throw new Error(`unknown command "${argv.slice(0, 2).join(" ")}"; commands: org create|suspend|activate, key create|revoke, maintenance on|off, ledger verify`);
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

try {
  const out = await run(process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(out)}\n`);
} catch (err) {
  process.stderr.write(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`);
  process.exit(1);
}
