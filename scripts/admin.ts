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
 *   refunds set-policy --org ID --env test|live --shortfall receivable|refuse   → {org_id, environment, shortfall_policy}:
 *                                                  what a refund does when the creator's balance cannot cover the
 *                                                  creator's part (docs/adr/0009-refund-shortfall.md); default receivable
 *   refunds get-policy --org ID --env test|live    → {org_id, environment, shortfall_policy}
 *   receipts rotate-key                            → {kid, alg, retired_kids, created_at}: new proofs are signed with the
 *                                                    new key, older ones still verify; needs RECEIPTS_SEALING_KEYS
 *   payouts cut-file                               → {file, payout_ids}: live payouts waiting for the bank go into one NACHA
 *                                                    file in the payouts service's drop directory (processing)
 *   payouts settle --date YYYY-MM-DD               → {settled, pending}: processing payouts filed at least the settlement
 *                                                    window before that date are paid
 *   payouts ingest-returns FILE                    → {failed, already_failed, unmatched, notices}: the bank's NACHA return
 *                                                    file fails the payouts it returns (their money back to the wallets)
 *   (payouts commands ask the running payouts service over NATS: NATS_URL and NATS_PREFIX, else the dev stack's)
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
import { SHORTFALL_POLICIES, setShortfallPolicy, shortfallPolicy } from "../services/refunds/src/store/settings.ts";
import { connectNats, rpcCall } from "@treasury/service-kit";
import { rpcSubject } from "@treasury/contracts";
import { ADMIN_OPERATIONS, RETURN_FILE_MAX_BYTES } from "../services/payouts/src/handlers/index.ts";

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

function devStackNatsUrl(): string {
  if (process.env.NATS_URL) return process.env.NATS_URL;
  const file = process.env.DEV_DATA_DIR ? resolve(process.env.DEV_DATA_DIR, "dev-stack.json") : new URL("../.data/dev-stack.json", import.meta.url);
  if (existsSync(file)) {
    const stack = JSON.parse(readFileSync(file, "utf8")) as { nats_url?: string };
    if (stack.nats_url) return stack.nats_url;
  }
  throw new Error("set NATS_URL (the payouts service's NATS) or start the dev stack with `npm start` first");
}

/**
 * Payout operations run in the payouts service, which holds the rail's configuration and the keys that open
 * account numbers: the CLI asks it over NATS and prints its answer.
 */
async function payoutsCommand(operation: string, payload: unknown): Promise<unknown> {
  const nc = await connectNats({ url: devStackNatsUrl(), name: "admin-cli" });
  try {
    const reply = await rpcCall(nc, rpcSubject(process.env.NATS_PREFIX ?? "", "payouts", operation), payload, { timeoutMs: 120_000 });
    if (!reply.ok) throw new DomainError(reply.error.code, reply.error.message);
    return reply.body;
  } finally {
    await nc.close();
  }
}

function need(v: string | undefined, flag: string): string {
  if (!v) throw new Error(`missing ${flag}`);
  return v;
}

async function run(argv: string[]): Promise<unknown> {
  const [group, action, ...rest] = argv;
  const { values, positionals } = parseArgs({
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
      date: { type: "string" },
      shortfall: { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  const takesFile = `${group} ${action}` === "payouts ingest-returns";
  if (positionals.length > (takesFile ? 1 : 0)) throw new Error(`unexpected argument "${positionals.at(-1) ?? ""}"`);
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
      case "refunds set-policy":
      case "refunds get-policy": {
        const env = need(values.env, "--env");
        if (env !== "test" && env !== "live") throw new Error("--env must be test or live");
        const scope = { orgId: need(values.org, "--org"), livemode: env === "live" };
        if (action === "set-policy") {
          const policy = SHORTFALL_POLICIES.find((p) => p === values.shortfall);
          if (policy === undefined) throw new Error(`--shortfall must be one of ${SHORTFALL_POLICIES.join(", ")}`);
          await setShortfallPolicy(sql, scope, policy);
        }
        return { org_id: scope.orgId, environment: env, shortfall_policy: await shortfallPolicy(sql, scope) };
      }
      case "receipts rotate-key": {
        // The receipts service's sealing keys: the new private key is sealed with the active one before it is stored.
        const sealer = sealerOf(process.env.RECEIPTS_SEALING_KEYS || undefined, process.env.RECEIPTS_SEALING_ACTIVE_KEY_ID || undefined);
        if (sealer === undefined) throw new Error("set RECEIPTS_SEALING_KEYS (and RECEIPTS_SEALING_ACTIVE_KEY_ID) as the receipts service has them");
        return await rotateSigningKey(sql, sealer);
      }
      case "payouts cut-file":
        return await payoutsCommand(ADMIN_OPERATIONS.cutFile, {});
      case "payouts settle":
        return await payoutsCommand(ADMIN_OPERATIONS.settle, { date: need(values.date, "--date") });
      case "payouts ingest-returns": {
        const path = need(positionals[0], "FILE");
        const content = readFileSync(path, "latin1");
        if (content.length > RETURN_FILE_MAX_BYTES) throw new Error(`${path} is larger than ${RETURN_FILE_MAX_BYTES} bytes`);
        return await payoutsCommand(ADMIN_OPERATIONS.ingestReturns, { name: path, content });
      }
      default:
        throw new Error(`unknown command "${argv.slice(0, 2).join(" ")}"; commands: org create|suspend|activate, key create|revoke, maintenance on|off, ledger verify, kyc list|show|approve|reject|suspend, refunds set-policy|get-policy, receipts rotate-key, payouts cut-file|settle|ingest-returns`);
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
