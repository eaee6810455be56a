// The gateway's operator commands and `find` answers over NATS, as the operator CLI sends them: each change and
// its row in gateway.audit_log commit together (a refused one leaves neither the change nor a success row), the
// answers and audit targets are the commands' own, an API key never reaches the log, and live keys wait for the
// org's business verification, asked of the KYC service (a stand-in here).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ADMIN_FANOUT_OPERATIONS, adminOperation, rpcSubject, type AuthContext, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { createLogger, rpcCall, RpcServer } from "@treasury/service-kit";
import { natsOptions, setupTestEnv, type TestEnv } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway, type Gateway } from "../service.ts";
import type { AuditEntry } from "@treasury/contracts";

const RPC_TIMEOUT_TEST_MS = 20_000;
const ACTOR = "ops:alice";

let env: TestEnv;
let gateway: Gateway;
let kycNc: NatsConnection;
let kyc: RpcServer;
/** Business verification status by `<org>|<livemode>` as the stand-in KYC service answers it (pending otherwise). */
const kyb = new Map<string, string>();

beforeAll(async () => {
  env = await setupTestEnv();
  kycNc = await connect(natsOptions(env.natsUrl));
  kyc = new RpcServer({ nc: kycNc, prefix: env.prefix, service: "kyc", log: createLogger({ service: "kyc-standin", level: "silent" }), concurrencyMax: 16 });
  kyc.handleRaw("getBusinessVerification", async (payload) => {
    const auth = (payload as { auth: AuthContext }).auth;
    return { ok: true, status: 200, body: { business_kyb: { status: kyb.get(`${auth.org_id}|${String(auth.livemode)}`) ?? "pending" } } };
  });
  kyc.start();
  await kycNc.flush();
  gateway = await buildGateway(env.env("gateway", { RPC_TIMEOUT_MS: "5000" }));
});

afterAll(async () => {
  await gateway?.stop();
  await kyc?.drain();
  await kycNc?.close();
  await env?.cleanup();
});

async function admin(command: string, flags: Record<string, string | boolean>, reason?: string): Promise<RpcReply> {
  const request = { actor: ACTOR, flags, positionals: [], ...(reason === undefined ? {} : { reason }) };
  return rpcCall(await env.nats(), rpcSubject(env.prefix, "gateway", adminOperation(command)), request, { timeoutMs: RPC_TIMEOUT_TEST_MS });
}

async function ok(command: string, flags: Record<string, string | boolean>, reason?: string): Promise<Record<string, unknown>> {
  const r = await admin(command, flags, reason);
  if (!r.ok) throw new Error(`${command} failed: ${r.error.code} ${r.error.message}`);
  return r.body;
}

async function failure(command: string, flags: Record<string, string | boolean>, reason?: string): Promise<{ code: string; message: string }> {
  const r = await admin(command, flags, reason);
  if (r.ok) throw new Error(`${command} answered ${JSON.stringify(r.body)}`);
  return r.error;
}

/** An audit row as the test reads it back. */
type AuditRow = Omit<AuditEntry, "source" | "id" | "at">;

/** The newest audit row of an action. */
async function lastAudit(action: string): Promise<AuditRow | undefined> {
  const [row] = await env.adminSql<AuditRow[]>`
    select actor, action, org_id, livemode, target_ids, reason, outcome, error_code, error, details
      from gateway.audit_log where action = ${action} order by id desc limit 1`;
  return row;
}

async function newOrg(name = "Acme"): Promise<string> {
  return String((await ok("org create", { name })).org_id);
}

async function findRows(request: {
  nodes: Array<{ kind: string; id: string; scope?: { orgId: string; livemode?: boolean } }>;
  seed: boolean;
}): Promise<FindRowsReply> {
  const r = await rpcCall(await env.nats(), rpcSubject(env.prefix, "gateway", ADMIN_FANOUT_OPERATIONS.findRows), request, { timeoutMs: RPC_TIMEOUT_TEST_MS });
  if (!r.ok) throw new Error(`find failed: ${r.error.code} ${r.error.message}`);
  return r.body as unknown as FindRowsReply;
}

describe("org and key commands", () => {
  it("creates an org and keys, each with its audit row, and never records the key itself", async () => {
    // Proves org create and key create answers, the change and its row together, and the row's targets and details.
    const created = await ok("org create", { name: "Acme" }, "new customer");
    const orgId = String(created.org_id);
    expect(created).toEqual({ org_id: expect.stringMatching(/^org_/) });
    expect(await lastAudit("org.create")).toMatchObject({
      actor: ACTOR,
      org_id: orgId,
      livemode: null,
      target_ids: [orgId],
      reason: "new customer",
      outcome: "succeeded",
      details: { name: "Acme", request_id: expect.any(String) },
    });

    const key = await ok("key create", { org: orgId, env: "test", scopes: "read,payments" });
    expect(key).toEqual({ api_key: expect.stringMatching(/^slk_test_/), key_id: expect.stringMatching(/^key_/) });
    const [stored] = await env.adminSql`select org_id, livemode, scopes from gateway.api_keys where id = ${String(key.key_id)}`;
    expect(stored).toEqual({ org_id: orgId, livemode: false, scopes: ["read", "payments"] });
    expect(await lastAudit("key.create")).toMatchObject({
      org_id: orgId,
      livemode: false,
      target_ids: [orgId, key.key_id],
      outcome: "succeeded",
      details: { scopes: "read,payments", force_unverified: false },
    });
    const [all] = await env.adminSql<{ text: string }[]>`select coalesce(string_agg(row_to_json(a)::text, ''), '') as text from gateway.audit_log a`;
    expect(all?.text).not.toContain(String(key.api_key));
  });

  it("refuses a live key until the org's business verification allows it, leaving neither key nor success row", async () => {
    // Proves the KYB gate asked of the KYC service (sandbox approval unlocks, a rejected live one stops) and
    // that a refused change is recorded as failed with its error code.
    const orgId = await newOrg();
    const refused = await failure("key create", { org: orgId, env: "live" }, "go live");
    expect(refused.code).toBe("kyb_not_approved");
    const [keys] = await env.adminSql<{ n: number }[]>`select count(*)::int as n from gateway.api_keys where org_id = ${orgId}`;
    expect(keys?.n).toBe(0);
    expect(await lastAudit("key.create")).toMatchObject({
      org_id: orgId,
      livemode: true,
      target_ids: [orgId],
      reason: "go live",
      outcome: "failed",
      error_code: "kyb_not_approved",
    });

    kyb.set(`${orgId}|false`, "approved");
    expect((await ok("key create", { org: orgId, env: "live" })).api_key).toMatch(/^slk_live_/);
    kyb.set(`${orgId}|true`, "rejected");
    expect((await failure("key create", { org: orgId, env: "live" })).code).toBe("kyb_not_approved");
    const forced = await ok("key create", { org: orgId, env: "live", "force-unverified": true });
    expect(await lastAudit("key.create")).toMatchObject({ target_ids: [orgId, forced.key_id], details: { force_unverified: true } });
  });

  it("revokes a key with its org and environment in the row, and records a revocation of an unknown key as failed", async () => {
    // Proves key revoke's owner lookup for the row, and a failure's row with what the flags named.
    const orgId = await newOrg();
    const key = await ok("key create", { org: orgId, env: "test" });
    const keyId = String(key.key_id);
    expect(await ok("key revoke", { "key-id": keyId }, "leaked")).toEqual({ key_id: keyId, revoked: true });
    const [revoked] = await env.adminSql`select revoked_at is not null as revoked from gateway.api_keys where id = ${keyId}`;
    expect(revoked).toEqual({ revoked: true });
    expect(await lastAudit("key.revoke")).toMatchObject({ org_id: orgId, livemode: false, target_ids: [keyId, orgId], reason: "leaked", outcome: "succeeded" });

    expect(await failure("key revoke", { "key-id": "key_doesnotexist" })).toEqual({ code: "validation_error", message: "key not found: key_doesnotexist" });
    expect(await lastAudit("key.revoke")).toMatchObject({
      org_id: null,
      livemode: null,
      target_ids: ["key_doesnotexist"],
      outcome: "failed",
      error: "key not found: key_doesnotexist",
    });
  });

  it("suspends and activates an org; checks its flags before any change", async () => {
    // Proves org suspend/activate answers and rows, and the validation errors of missing or bad flags.
    const orgId = await newOrg();
    expect(await ok("org suspend", { org: orgId }, "chargeback spike")).toEqual({ org_id: orgId, status: "suspended" });
    expect(await lastAudit("org.suspend")).toMatchObject({ org_id: orgId, target_ids: [orgId], reason: "chargeback spike", outcome: "succeeded" });
    expect(await ok("org activate", { org: orgId })).toEqual({ org_id: orgId, status: "active" });
    const [org] = await env.adminSql`select status from gateway.orgs where id = ${orgId}`;
    expect(org).toEqual({ status: "active" });

    expect(await failure("org suspend", { org: "org_missing" })).toEqual({ code: "validation_error", message: "org not found: org_missing" });
    expect(await failure("org create", {})).toEqual({ code: "validation_error", message: "missing --name" });
    expect(await lastAudit("org.create")).toMatchObject({ org_id: null, target_ids: [], outcome: "failed", error: "missing --name" });
    expect((await failure("key create", { org: orgId, env: "prod" })).message).toBe("--env must be test or live");
    expect((await failure("key create", { org: orgId, env: "test", scopes: "read,everything" })).message).toMatch(/^unknown scope "everything"/);
  });
});

describe("maintenance", () => {
  it("turns maintenance on and off with the setting in the row", async () => {
    // Proves the setting stored with its row, the answer, and --retry-after's bounds.
    const on = await ok("maintenance on", { "retry-after": "30", message: "database upgrade" }, "planned");
    expect(on).toEqual({ maintenance: { enabled: true, retry_after_s: 30, message: "database upgrade" } });
    const [setting] = await env.adminSql`select value from gateway.settings where key = 'maintenance'`;
    expect(setting).toEqual({ value: on.maintenance });
    expect(await lastAudit("maintenance.on")).toMatchObject({ org_id: null, target_ids: [], outcome: "succeeded", details: on });

    for (const bad of ["0", "1.5", "86401", true]) {
      expect((await failure("maintenance on", { "retry-after": bad })).message).toBe("--retry-after must be 1–86400 seconds");
    }
    expect(await ok("maintenance off", {})).toEqual({ maintenance: { enabled: false, retry_after_s: 60, message: "" } });
    expect(await lastAudit("maintenance.off")).toMatchObject({ outcome: "succeeded", details: { maintenance: { enabled: false } } });
  });
});

describe("find", () => {
  it("answers orgs with their newest keys when asked for, and keys by id without their hash", async () => {
    // Proves admin.find.rows: the org (not followed), its key list on the seed level only, a key (followed)
    // and, for a key asked for without an org, the key's node in its org and environment.
    const orgId = await newOrg("Findable");
    const key = await ok("key create", { org: orgId, env: "test" });
    const keyId = String(key.key_id);

    const seed = await findRows({ nodes: [{ kind: "org", id: orgId }], seed: true });
    expect(seed.hits.map((h) => [h.table, h.follow])).toEqual([
      ["gateway.orgs", false],
      ["gateway.api_keys", false],
    ]);
    expect(seed.hits[0]?.row).toMatchObject({ id: orgId, name: "Findable", status: "active" });
    expect(seed.hits[1]?.row).toMatchObject({ id: keyId, org_id: orgId, livemode: false });
    expect(seed.hits[1]?.row).not.toHaveProperty("key_hash");
    expect((await findRows({ nodes: [{ kind: "org", id: orgId }], seed: false })).hits.map((h) => h.table)).toEqual(["gateway.orgs"]);

    const byKey = await findRows({ nodes: [{ kind: "api_key", id: keyId }], seed: false });
    expect(byKey.hits).toEqual([{ table: "gateway.api_keys", row: expect.objectContaining({ id: keyId, display_prefix: expect.any(String) }), follow: true }]);
    expect(byKey.hits[0]?.row).not.toHaveProperty("key_hash");
    expect(byKey.nodes).toEqual([{ kind: "api_key", id: keyId, scope: { orgId, livemode: false } }]);
    const scoped = await findRows({ nodes: [{ kind: "api_key", id: keyId, scope: { orgId, livemode: false } }], seed: false });
    expect(scoped.nodes).toEqual([]);
    expect(await findRows({ nodes: [{ kind: "delivery", id: "whd_x" }], seed: true })).toEqual({ hits: [], nodes: [] });
  });
});
