// Proves the operator CLI over NATS: org and key lifecycle as JSON on stdout, errors on stderr with a non-zero exit, and the live-key KYB gate.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestEnv } from "@treasury/testing";
import { admin as adminOf } from "./admin-run.ts";
import { startStack, type Stack } from "./stack.ts";

let s: Stack;
let env: TestEnv;
const admin = (...args: string[]) => adminOf(env, ...args);

beforeAll(async () => {
  // The commands are answered by the services that own them: the gateway (orgs, keys, maintenance; kyc says whether
  // a live key's KYB is approved) and the ledger.
  s = await startStack({ services: ["ledger", "kyc"] });
  env = s.env;
});
afterAll(async () => {
  await s?.stop();
});

describe("admin CLI", () => {
  it("creates an org and scoped keys, refuses a live key without KYB unless forced, revokes keys and suspends orgs", async () => {
    const org = await admin("org", "create", "--name", "Acme Creators");
    expect(org.code).toBe(0);
    expect(org.out.org_id).toMatch(/^org_/);
    const orgId = String(org.out.org_id);

    const test = await admin("key", "create", "--org", orgId, "--env", "test", "--scopes", "read,payments");
    expect(test.code).toBe(0);
    expect(test.out.api_key).toMatch(/^slk_test_[A-Za-z0-9]{32}$/);
    const [row] = await env.adminSql`select scopes, livemode, key_hash from gateway.api_keys where id = ${String(test.out.key_id)}`;
    expect(row).toMatchObject({ scopes: ["read", "payments"], livemode: false });
    // Only the hash is stored.
    expect(JSON.stringify(row)).not.toContain(String(test.out.api_key));

    const live = await admin("key", "create", "--org", orgId, "--env", "live");
    expect(live.code).not.toBe(0);
    expect(String(live.err.error)).toContain("KYB");
    const forced = await admin("key", "create", "--org", orgId, "--env", "live", "--force-unverified");
    expect(forced.code).toBe(0);
    expect(forced.out.api_key).toMatch(/^slk_live_/);

    const revoke = await admin("key", "revoke", "--key-id", String(test.out.key_id));
    expect(revoke.out).toEqual({ key_id: test.out.key_id, revoked: true });
    const [revoked] = await env.adminSql`select revoked_at from gateway.api_keys where id = ${String(test.out.key_id)}`;
    expect(revoked?.revoked_at).not.toBeNull();

    expect((await admin("org", "suspend", "--org", orgId)).out).toEqual({ org_id: orgId, status: "suspended" });
    expect((await env.adminSql`select status from gateway.orgs where id = ${orgId}`)[0]?.status).toBe("suspended");
    expect((await admin("org", "activate", "--org", orgId)).out.status).toBe("active");
  });

  it("verifies the ledger's invariants: ok on a consistent ledger, exit 1 with the violation listed on a corrupted one", async () => {
    const ok = await admin("ledger", "verify");
    expect(ok.code).toBe(0);
    expect(ok.out).toEqual({ ok: true, violations: [] });
    // Corrupt a stored balance behind the ledger's back (as superuser; the ledger role could not do this to entries).
    const [wallet] = await env.adminSql<{ id: string }[]>`
      insert into ledger.accounts (id, org_id, livemode, account_type, entity_id, name, normal_side, balance, held_amount, owner_id, owner_type, status)
      values (gen_random_uuid(), 'org_x', false, 'consumer_credit', 'buyer_1', 'w', 'credit', 500, 0, 'buyer_1', 'consumer', 'active')
      returning id`;
    const bad = await admin("ledger", "verify", "--org", "org_x");
    expect(bad.code).toBe(1);
    expect(bad.out.ok).toBe(false);
    expect(JSON.stringify(bad.out.violations)).toContain(String(wallet?.id));
    expect((await admin("ledger", "verify", "--org", "org_other")).code).toBe(0);
  });

  it("switches maintenance mode on and off", async () => {
    const on = await admin("maintenance", "on", "--retry-after", "90", "--message", "Upgrading");
    expect(on.out).toEqual({ maintenance: { enabled: true, retry_after_s: 90, message: "Upgrading" } });
    expect((await env.adminSql`select value from gateway.settings where key = 'maintenance'`)[0]?.value).toMatchObject({ enabled: true });
    expect((await admin("maintenance", "off")).out).toMatchObject({ maintenance: { enabled: false } });
    expect((await admin("maintenance", "on", "--retry-after", "0")).code).not.toBe(0);
  });

  it("fails with a message on stderr for bad input", async () => {
    const bad = await admin("key", "create", "--org", "org_missing", "--env", "test");
    expect(bad.code).not.toBe(0);
    expect(String(bad.err.error)).toContain("org not found");
    const scope = await admin("key", "create", "--org", "org_missing", "--env", "test", "--scopes", "read,bogus");
    expect(String(scope.err.error)).toContain("unknown scope");
    const cmd = await admin("frobnicate");
    expect(cmd.code).not.toBe(0);
  });
});
