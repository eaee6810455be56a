// Proves the operator audit log: every changing admin command leaves one row (who, when, what, ids, reason, outcome) in the log of the service that performed it, written with its change, failures included; KYC decisions are read from the kyc service's own review record; `audit list` filters; no role can change or delete a row.
import postgres from "postgres";
import type { AuditEntry } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import type { TestEnv } from "@treasury/testing";
import { find, type AdminClient } from "@treasury/service-kit/operator-client";
import { admin as adminOf, adminClient } from "./admin-run.ts";
import { startStack, type Stack } from "./stack.ts";

let s: Stack;
let env: TestEnv;
let client: AdminClient;
const admin = (...args: string[]) => adminOf(env, ...args);

/** An audit row as `audit list` prints it. */
type Entry = AuditEntry;

async function auditList(...filters: string[]): Promise<Entry[]> {
  const r = await admin("audit", "list", ...filters);
  expect(r.code, JSON.stringify(r.err)).toBe(0);
  expect(r.out["count"]).toBe((r.out["entries"] as Entry[]).length);
  return r.out["entries"] as Entry[];
}

beforeAll(async () => {
  // Every command is answered by the service that owns it, and each keeps its own audit log.
  s = await startStack({
    services: ["ledger", "refunds", "kyc", "payouts"],
    serviceEnv: { kyc: { PII_KEYS: generateKeyRingEntry("audit0") }, payouts: { PII_KEYS: generateKeyRingEntry("audit1") } },
  });
  env = s.env;
  client = await adminClient(env);
});
afterAll(async () => {
  await client?.close();
  await s?.stop();
});

// Each step runs the operator CLI as its own Node process (1–2 s each on a busy 2-core machine): a test of a dozen
// steps needs more than the default 30 s.
describe("admin audit", { timeout: 120_000 }, () => {
  let orgId = "";
  let keyId = "";

  it("records org, key, maintenance and refund-policy commands with actor, ids, reason and outcome, never the key itself", async () => {
    // Proves one succeeded row per changing command, in the same transaction as the change, with the targets an operator searches by.
    const org = await admin("org", "create", "--name", "Audit Co", "--actor", "ops:ada", "--reason", "new customer onboarding");
    orgId = String(org.out["org_id"]);
    const key = await admin("key", "create", "--org", orgId, "--env", "test", "--scopes", "read", "--actor", "ops:ada");
    keyId = String(key.out["key_id"]);
    expect((await admin("key", "revoke", "--key-id", keyId, "--reason", "leaked in a support ticket", "--actor", "ops:bob")).code).toBe(0);
    expect((await admin("org", "suspend", "--org", orgId, "--reason", "chargeback spike")).code).toBe(0);
    expect((await admin("org", "activate", "--org", orgId)).code).toBe(0);
    expect((await admin("maintenance", "on", "--retry-after", "30", "--reason", "database upgrade")).code).toBe(0);
    expect((await admin("maintenance", "off")).code).toBe(0);
    expect((await admin("refunds", "set-policy", "--org", orgId, "--env", "live", "--shortfall", "refuse", "--reason", "creator abuse")).code).toBe(0);

    const entries = await auditList();
    expect(entries.map((e) => e.action)).toEqual([
      "refunds.set-policy",
      "maintenance.off",
      "maintenance.on",
      "org.activate",
      "org.suspend",
      "key.revoke",
      "key.create",
      "org.create",
    ]);
    const by = (action: string): Entry => entries.find((e) => e.action === action) as Entry;
    expect(by("org.create")).toMatchObject({
      source: "gateway.audit_log",
      actor: "ops:ada",
      org_id: orgId,
      target_ids: [orgId],
      reason: "new customer onboarding",
      outcome: "succeeded",
      error: null,
      details: { name: "Audit Co" },
    });
    expect(by("key.create")).toMatchObject({
      actor: "ops:ada",
      org_id: orgId,
      livemode: false,
      target_ids: [orgId, keyId],
      details: { scopes: "read", force_unverified: false },
    });
    // The revoke row names the key's org although only the key id was given.
    expect(by("key.revoke")).toMatchObject({
      actor: "ops:bob",
      org_id: orgId,
      livemode: false,
      target_ids: [keyId, orgId],
      reason: "leaked in a support ticket",
      outcome: "succeeded",
    });
    expect(by("org.suspend")).toMatchObject({ org_id: orgId, reason: "chargeback spike", outcome: "succeeded" });
    expect(by("maintenance.on")).toMatchObject({ org_id: null, target_ids: [], details: { maintenance: { enabled: true, retry_after_s: 30 } } });
    expect(by("refunds.set-policy")).toMatchObject({
      source: "refunds.audit_log",
      org_id: orgId,
      livemode: true,
      details: { shortfall_policy: "refuse" },
      outcome: "succeeded",
    });
    // Without --actor the operator's login name is recorded.
    expect(by("org.activate").actor).toMatch(/^operator:.+/);
    expect(new Date(by("org.create").at).getTime()).toBeLessThanOrEqual(new Date(by("key.create").at).getTime());
    // The API key exists only in the command's answer.
    const [all] = await env.adminSql<{ text: string }[]>`select coalesce(string_agg(row_to_json(a)::text, ''), '') as text from gateway.audit_log a`;
    expect(all?.text).not.toContain(String(key.out["api_key"]));
    expect(all?.text).toContain(keyId);
  });

  it("records failed attempts with the error, and a failed change leaves neither the change nor a success row", async () => {
    // Proves outcome failed with error and error_code, and atomicity: the refused live key was not created.
    const missing = await admin("key", "revoke", "--key-id", "key_doesnotexist", "--reason", "cleanup");
    expect(missing.code).toBe(1);
    const live = await admin("key", "create", "--org", orgId, "--env", "live", "--reason", "go live");
    expect(live.err).toMatchObject({ error_code: "kyb_not_approved" });
    const [keys] = await env.adminSql<{ n: number }[]>`select count(*)::int as n from gateway.api_keys where org_id = ${orgId} and livemode`;
    expect(keys?.n).toBe(0);
    const [create, revoke] = await auditList("--action", "key", "--limit", "2");
    expect(create).toMatchObject({
      action: "key.create",
      outcome: "failed",
      error_code: "kyb_not_approved",
      org_id: orgId,
      livemode: true,
      target_ids: [orgId],
      reason: "go live",
    });
    expect(revoke).toMatchObject({
      action: "key.revoke",
      outcome: "failed",
      error_code: "validation_error",
      target_ids: ["key_doesnotexist"],
      org_id: null,
      reason: "cleanup",
    });
    expect(revoke?.error).toContain("key not found");
    expect((await env.adminSql`select 1 from gateway.audit_log where action = 'key.create' and outcome = 'succeeded' and livemode`).length).toBe(0);
  });

  it("reads KYC decisions from the kyc service's review record and keeps refused decisions in the log", async () => {
    // Proves `audit list` merges kyc.review_actions (written with each decision) and the log's failed attempt.
    const submission = "kycs_auditfixture000000000001";
    await env.adminSql`
      insert into kyc.submissions (id, org_id, livemode, subject, status, pii, pii_key_id, submitted_at)
      values (${submission}, ${orgId}, false, 'business', 'under_review', 'sealed', 'k1', now())`;
    await env.adminSql`insert into kyc.business_verifications (org_id, livemode, status, latest_submission_id) values (${orgId}, false, 'under_review', ${submission})`;
    const approved = await admin("kyc", "approve", "--id", submission, "--actor", "ops:carol", "--reason", "documents match");
    expect(approved.out).toMatchObject({ status: "approved", actor: "ops:carol" });
    const again = await admin("kyc", "approve", "--id", submission, "--actor", "ops:carol");
    expect(again.err).toMatchObject({ error_code: "invalid_state_transition" });

    const kyc = await auditList("--action", "kyc");
    expect(kyc).toHaveLength(2);
    expect(kyc[0]).toMatchObject({
      source: "kyc.audit_log",
      action: "kyc.approve",
      outcome: "failed",
      error_code: "invalid_state_transition",
      org_id: orgId,
      target_ids: [submission],
      actor: "ops:carol",
    });
    expect(kyc[1]).toMatchObject({
      source: "kyc.review_actions",
      action: "kyc.approve",
      outcome: "succeeded",
      actor: "ops:carol",
      org_id: orgId,
      reason: "documents match",
      details: { subject: "business", from_status: "under_review", to_status: "approved" },
    });
    expect(kyc[1]?.target_ids).toEqual([submission, String(approved.out["event_id"])]);
    expect((await auditList("--action", "kyc.approve", "--target", submission)).map((e) => e.source)).toEqual(["kyc.audit_log", "kyc.review_actions"]);
    // The common log holds no success row for it: one record per decision.
    expect((await env.adminSql`select 1 from kyc.audit_log where action = 'kyc.approve' and outcome = 'succeeded'`).length).toBe(0);
  });

  it("records payout rail commands in the payouts service with the request id they carried, and their failures", async () => {
    // Proves the non-atomic path: the payouts service does the work, then writes the row with the outcome and the call's request id.
    const settled = await admin("payouts", "settle", "--date", "2026-03-02", "--reason", "bank statement of March 2", "--actor", "ops:dan");
    expect(settled.out).toMatchObject({ as_of: "2026-03-02", settled: [], pending: [] });
    // No ACH rail configured: the service refuses, and the refusal is what the log keeps.
    const failedCut = await admin("payouts", "cut-file", "--actor", "ops:dan");
    expect(failedCut.code).toBe(1);
    const [cut, settle] = await auditList("--action", "payouts");
    expect(settle).toMatchObject({
      action: "payouts.settle",
      actor: "ops:dan",
      outcome: "succeeded",
      livemode: true,
      target_ids: [],
      reason: "bank statement of March 2",
      details: { date: "2026-03-02" },
    });
    expect(settle?.details["request_id"]).toMatch(/^req_[0-9a-f]{32}$/);
    expect(cut).toMatchObject({ action: "payouts.cut-file", outcome: "failed", error_code: expect.any(String) });
    expect(cut?.details["request_id"]).toMatch(/^req_[0-9a-f]{32}$/);
    expect(cut?.details["request_id"]).not.toBe(settle?.details["request_id"]);
  }, 60_000);

  it("shows operator actions on an id in `admin find` of that id", async () => {
    // Proves find joins the audit log and the KYC review record to the path of a key and of a submission.
    const key = await find(client, keyId);
    expect(key.rows["gateway.api_keys"]?.[0]).toMatchObject({ id: keyId, org_id: orgId });
    expect(key.rows["gateway.api_keys"]?.[0]).not.toHaveProperty("key_hash");
    expect(key.audit.map((e) => e.action)).toEqual(["key.revoke", "key.create"]);
    const submission = await find(client, "kycs_auditfixture000000000001");
    expect(submission.rows["kyc.submissions"]?.[0]).toMatchObject({ status: "approved" });
    expect(submission.rows["kyc.submissions"]?.[0]).not.toHaveProperty("pii");
    expect(submission.events.map((e) => e["type"])).toEqual(["kyc.approved"]);
    expect(submission.audit.map((e) => `${e.source} ${e.action} ${e.outcome}`)).toEqual([
      "kyc.audit_log kyc.approve failed",
      "kyc.review_actions kyc.approve succeeded",
    ]);
  });

  it("filters by org, action, since, target and limit, and refuses bad filters", async () => {
    // Proves each filter narrows the list and bad values are errors, not empty answers.
    const other = String((await admin("org", "create", "--name", "Other Co")).out["org_id"]);
    const mine = await auditList("--org", orgId);
    expect(mine.length).toBeGreaterThan(5);
    expect(mine.every((e) => e.org_id === orgId)).toBe(true);
    expect((await auditList("--org", other)).map((e) => e.action)).toEqual(["org.create"]);
    expect((await auditList("--action", "maintenance")).map((e) => e.action)).toEqual(["maintenance.off", "maintenance.on"]);
    expect((await auditList("--action", "maintenance.on")).map((e) => e.action)).toEqual(["maintenance.on"]);
    expect(await auditList("--since", "2999-01-01")).toEqual([]);
    expect((await auditList("--since", "1h")).length).toBeGreaterThan(10);
    expect((await auditList("--target", keyId)).map((e) => e.action)).toEqual(["key.revoke", "key.create"]);
    expect(await auditList("--limit", "3")).toHaveLength(3);
    expect((await admin("audit", "list", "--since", "yesterday")).code).toBe(1);
    expect((await admin("audit", "list", "--limit", "0")).err["error"]).toContain("--limit");
    expect((await admin("audit", "list", "--action", "DROP TABLE")).code).toBe(1);
    expect((await admin("org", "create", "--name", "X", "--actor", " ")).err["error"]).toContain("--actor");
  });

  it("is append-only for every role, the owner and each service's own role included", async () => {
    // Proves the database refuses UPDATE, DELETE and TRUNCATE on every service's log whoever asks.
    const refused = async (sql: postgres.Sql, statement: string) => {
      const err = await sql.unsafe(statement).catch((e: unknown) => e);
      expect(err, statement).toBeInstanceOf(postgres.PostgresError);
      expect((err as postgres.PostgresError).code).toBe("42501");
    };
    for (const service of ["gateway", "refunds"] as const) {
      const log = `${service}.audit_log`;
      const [before] = await env.adminSql<{ n: number }[]>`select count(*)::int as n from ${env.adminSql(log)}`;
      expect(before?.n).toBeGreaterThan(0);
      await refused(env.adminSql, `update ${log} set actor = 'someone else'`);
      await refused(env.adminSql, `delete from ${log}`);
      await refused(env.adminSql, `truncate ${log}`);
      const own = postgres(env.dbUrl(service), { max: 1, onnotice: () => {} });
      try {
        await refused(own, `update ${log} set reason = null`);
        await refused(own, `delete from ${log} where true`);
      } finally {
        await own.end({ timeout: 5 });
      }
      const [after] = await env.adminSql<{ n: number }[]>`select count(*)::int as n from ${env.adminSql(log)}`;
      expect(after?.n).toBe(before?.n);
    }
  });
});
