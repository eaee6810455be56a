/**
 * Operator CLI (not the public API). Output is JSON on stdout; errors go to stderr with a non-zero exit.
 *   org create --name NAME                         → {org_id}
 *   org suspend|activate --org ID
 *   key create --org ID --env test|live [--scopes read,payments] [--force-unverified]   → {api_key, key_id}
 *   key revoke --key-id ID
 *   maintenance on [--retry-after SECONDS] [--message TEXT] | maintenance off
 *   ledger verify [--org ID]                       → {ok, violations}; exits 1 when any invariant is violated
 *   kyc list --status pending|under_review|approved|rejected|suspended [--org ID] [--subject business|creator] [--limit N]
 *                                                  → {verifications} (latest submissions, oldest first, no personal data)
 *   kyc approve|reject|suspend --id kycs_… [--reason TEXT] [--actor NAME]   → the decision (reason required to reject or suspend)
 *   kyc show --id kycs_… --reason TEXT [--actor NAME]   → the submission with its personal data, history and audit trail;
 *                                                  the access is audited; needs PII_KEYS (else the dev stack's key)
 *   receipts rotate-key                            → {kid, alg, retired_kids, created_at}: new proofs are signed with the
 *                                                    new key, older ones still verify; needs RECEIPTS_SEALING_KEYS
 * Connects with DATABASE_URL (an admin URL), else the dev stack's database (.data/dev-stack.json, or under
 * DEV_DATA_DIR as `npm start` uses it).
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { userInfo } from "node:os";
import postgres from "postgres";
import { DomainError, schemas } from "@treasury/contracts";
import { parseKeyRing, Sealer } from "@treasury/service-kit";
import { createApiKey, createOrg, parseScopes, revokeApiKey, setMaintenance, setOrgStatus } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/invariants.ts";
import { sealerOf } from "../services/receipts/src/signing/sealer.ts";
import { rotateSigningKey } from "../services/receipts/src/usecases/rotate-key.ts";
import { listVerifications, reviewSubmission, showSubmission } from "../services/kyc/src/usecases/review.ts";

function databaseUrl(): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const file = process.env.DEV_DATA_DIR ? resolve(process.env.DEV_DATA_DIR, "dev-stack.json") : new URL("../.data/dev-stack.json", import.meta.url);
  if (existsSync(file)) {
    const stack = JSON.parse(readFileSync(file, "utf8")) as { database_url?: string };
    if (stack.database_url) return stack.database_url;
  }
  throw new Error("set DATABASE_URL (admin connection URL) or start the dev stack with `npm start` first");
}

/** The key ring that opens personal data: PII_KEYS (and PII_ACTIVE_KEY_ID), else the one `npm start` generated. */
function piiSealer(): Sealer {
  let spec = process.env.PII_KEYS;
  if (!spec) {
    const file = process.env.DEV_DATA_DIR ? resolve(process.env.DEV_DATA_DIR, "pii-keys") : new URL("../.data/pii-keys", import.meta.url);
    if (existsSync(file)) spec = readFileSync(file, "utf8").trim();
  }
  if (!spec) throw new Error("set PII_KEYS (the kyc service's key ring) to open personal data");
  return new Sealer(parseKeyRing(spec, process.env.PII_ACTIVE_KEY_ID || undefined));
}

/** Who decides, for the KYC audit trail when --actor is not given: the operator's login name. */
function defaultActor(): string {
  try {
    return `operator:${userInfo().username}`;
  } catch {
    return "operator:unknown";
  }
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
      status: { type: "string" },
      subject: { type: "string" },
      limit: { type: "string" },
      id: { type: "string" },
      reason: { type: "string" },
      actor: { type: "string" },
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
      case "kyc list": {
        const status = schemas.KycStatus.safeParse(values.status);
        if (!status.success) throw new Error(`--status must be one of ${schemas.KYC_STATUSES.join(", ")}`);
        if (values.subject !== undefined && values.subject !== "business" && values.subject !== "creator") throw new Error("--subject must be business or creator");
        const limit = values.limit === undefined ? undefined : Number(values.limit);
        return { verifications: await listVerifications(sql, { status: status.data, orgId: values.org, subject: values.subject, limit }) };
      }
      case "kyc approve":
      case "kyc reject":
      case "kyc suspend":
        return await reviewSubmission(sql, {
          submissionId: need(values.id, "--id"),
          action: action === "approve" ? "approve" : action === "reject" ? "reject" : "suspend",
          actor: values.actor ?? defaultActor(),
          reason: values.reason,
        });
      case "kyc show":
        return await showSubmission(sql, piiSealer(), { submissionId: need(values.id, "--id"), actor: values.actor ?? defaultActor(), reason: values.reason });
      case "receipts rotate-key": {
        // The receipts service's sealing keys: the new private key is sealed with the active one before it is stored.
        const sealer = sealerOf(process.env.RECEIPTS_SEALING_KEYS || undefined, process.env.RECEIPTS_SEALING_ACTIVE_KEY_ID || undefined);
        if (sealer === undefined) throw new Error("set RECEIPTS_SEALING_KEYS (and RECEIPTS_SEALING_ACTIVE_KEY_ID) as the receipts service has them");
        return await rotateSigningKey(sql, sealer);
      }
      default:
        throw new Error(`unknown command "${argv.slice(0, 2).join(" ")}"; commands: org create|suspend|activate, key create|revoke, maintenance on|off, ledger verify, kyc list|show|approve|reject|suspend, receipts rotate-key`);
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

try {
  const out = await run(process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(out)}\n`);
} catch (err) {
  const code = err instanceof DomainError ? { error_code: err.code } : {};
  process.stderr.write(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err), ...code })}\n`);
  process.exit(1);
}
