// Proves the gateway's authentication, fail-closed scopes and sandbox/live separation, against real PostgreSQL and NATS.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ROUTES, SCOPES, type RouteDef, type Scope } from "@treasury/contracts";
import { createHash } from "node:crypto";
import { waitFor, natsOptions } from "@treasury/testing";
import { call, startStack, type Stack } from "./stack.ts";
import { revokeApiKey, setOrgStatus } from "../../services/gateway/src/admin.ts";

let stack: Stack;
let spy: NatsConnection;
const seen: { subject: string; data: Record<string, unknown> }[] = [];

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { AUTH_FAILURES_PER_MIN: "1000" } });
  // A plain (non-queue) subscriber sees every request that reaches any service subject.
  spy = await connect(natsOptions(stack.env.natsUrl));
  const sub = spy.subscribe(`${stack.env.prefix}svc.>`);
  void (async () => {
    for await (const m of sub) {
      try {
        seen.push({ subject: m.subject, data: m.json<Record<string, unknown>>() });
      } catch {
        seen.push({ subject: m.subject, data: {} });
      }
    }
  })();
  await spy.flush();
});

afterAll(async () => {
  await spy?.close();
  await stack?.stop();
});

type Answer = Awaited<ReturnType<typeof call>>;
/** Admin changes reach the gateway by NOTIFY: poll until the answer changes, far inside the 5 s cache TTL. */
async function eventually(key: string, ok: (r: Answer) => boolean): Promise<Answer> {
  const started = Date.now();
  const r = await waitFor(
    async () => {
      const a = await call(stack.baseUrl, "GET", "/v1/participants", { key });
      return ok(a) ? a : false;
    },
    { timeoutMs: 2_000, intervalMs: 20 },
  );
  expect(Date.now() - started).toBeLessThan(2_000);
  return r;
}

/**
 * Waits until every request the gateway forwarded so far has reached the spy: one more forwarded request goes
 * out behind them on the gateway's connection, so once the spy has it, it has everything before it.
 */
async function drained(): Promise<void> {
  const marker = `drain_${Date.now().toString(36)}_${Math.random().toString(36).slice(2)}`;
  await call(stack.baseUrl, "GET", `/v1/participants/${marker}`, { key: stack.testKey });
  await waitFor(() => seen.some((m) => JSON.stringify(m.data).includes(marker)));
}

/** Requests the spy saw, without the drain markers and health probes. */
function forwarded(): typeof seen {
  return seen.filter((m) => !m.subject.endsWith("._health") && !JSON.stringify(m.data).includes("drain_"));
}

function concretePath(r: RouteDef): string {
  return r.path.replace(/:([A-Za-z_]+)/g, "x_$1");
}

describe("authentication", () => {
  it("answers 401 missing_api_key without a key", async () => {
    const r = await call(stack.baseUrl, "GET", "/v1/participants");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, error: "Missing API key", error_code: "missing_api_key" });
    expect(r.body.request_id).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it("answers 401 invalid_api_key for malformed, unknown, revoked and expired keys", async () => {
    for (const key of ["nope", "slk_test_short", `slk_test_${"A".repeat(32)}`, `slk_prod_${"A".repeat(32)}`]) {
      const r = await call(stack.baseUrl, "GET", "/v1/participants", { key });
      expect(r.status, key).toBe(401);
      expect(r.body.error_code).toBe("invalid_api_key");
      expect(r.body.error).toBe("Invalid API key");
    }
    const { api_key, key_id } = await stack.key({});
    expect((await call(stack.baseUrl, "GET", "/v1/participants", { key: api_key })).status).toBe(200);
    await revokeApiKey(stack.env.adminSql, key_id);
    // The revocation NOTIFY clears the cache: refused well within the 5 s cache TTL (as soon as it arrives).
    const revokedAt = Date.now();
    await waitFor(async () => (await call(stack.baseUrl, "GET", "/v1/participants", { key: api_key })).body.error_code === "invalid_api_key", {
      timeoutMs: 2_000,
      intervalMs: 20,
    });
    expect(Date.now() - revokedAt).toBeLessThan(2_000);

    const expired = await stack.key({});
    await stack.env.adminSql`update gateway.api_keys set expires_at = now() - interval '1 second' where id = ${expired.key_id}`;
    await stack.env.adminSql`select pg_notify('gateway_auth_changed', 'x')`;
    await eventually(expired.api_key, (r) => r.body.error_code === "invalid_api_key");
  });

  it("treats a key presented under the other environment's prefix as invalid", async () => {
    const { api_key } = await stack.key({ environment: "sandbox" });
    const asLive = api_key.replace("slk_test_", "slk_live_");
    const r = await call(stack.baseUrl, "GET", "/v1/participants", { key: asLive });
    expect(r.status).toBe(401);
    // Even a stored key whose prefix disagrees with its environment is refused.
    const forged = `slk_live_${"Q".repeat(32)}`;
    await stack.env.adminSql`insert into gateway.api_keys (id, org_id, livemode, key_hash, display_prefix)
      values ('key_forged', ${stack.orgId}, false, ${createHash("sha256").update(forged).digest("hex")}, 'slk_live_QQQQ')`;
    // Never presented before, so the gateway reads it from the database, and refuses it on its prefix.
    expect((await call(stack.baseUrl, "GET", "/v1/participants", { key: forged })).status).toBe(401);
  });

  it("accepts the legacy sk_test_ / sk_live_ prefixes with the same meaning", async () => {
    for (const [prefix, livemode] of [
      ["sk_test_", false],
      ["sk_live_", true],
    ] as const) {
      const legacy = `${prefix}${"L".repeat(32)}`;
      const keyId = `key_legacy_${livemode ? "live" : "test"}`;
      await stack.env.adminSql`insert into gateway.api_keys (id, org_id, livemode, key_hash, display_prefix)
        values (${keyId}, ${stack.orgId}, ${livemode}, ${createHash("sha256").update(legacy).digest("hex")}, ${legacy.slice(0, 12)})`;
      // Never presented before, so the gateway reads it from the database: no cache to wait for.
      seen.length = 0;
      const r = await call(stack.baseUrl, "GET", "/v1/participants", { key: legacy });
      expect(r.status, prefix).toBe(200);
      expect(r.body.success, prefix).toBe(true);
      await drained();
      const auths = forwarded()
        .filter((m) => m.subject.endsWith("svc.ledger.listParticipants"))
        .map((m) => m.data.auth);
      expect(auths, prefix).toEqual([expect.objectContaining({ key_id: keyId, livemode, org_id: stack.orgId })]);
    }
  });

  it("answers 403 ledger_suspended for a suspended, inactive or canceled org, and recovers on activation", async () => {
    const { org_id } = await (await import("../../services/gateway/src/admin.ts")).createOrg(stack.env.adminSql, { name: "Other" });
    const { api_key } = await stack.key({ orgId: org_id });
    for (const status of ["suspended", "inactive", "canceled"] as const) {
      await setOrgStatus(stack.env.adminSql, org_id, status);
      const r = await eventually(api_key, (x) => x.status === 403);
      expect(r.body).toMatchObject({ error_code: "ledger_suspended", error: "Ledger suspended" });
      await setOrgStatus(stack.env.adminSql, org_id, "active");
      await eventually(api_key, (x) => x.status === 200);
    }
    expect((await call(stack.baseUrl, "GET", "/v1/participants", { key: api_key })).status).toBe(200);
  });
});

describe("scopes", () => {
  it("refuses every scoped route with 403 insufficient_scope when the key lacks its scope, and the service never sees it", async () => {
    const lacking = new Map<Scope, string>();
    for (const s of SCOPES) lacking.set(s, (await stack.key({ scopes: SCOPES.filter((x) => x !== s) })).api_key);
    const scoped = ROUTES.filter((r) => r.scope !== null);
    expect(scoped.length).toBeGreaterThan(40);
    await spy.flush();
    seen.length = 0;
    for (const r of scoped) {
      const res = await call(stack.baseUrl, r.method, concretePath(r), { key: lacking.get(r.scope as Scope), body: r.method === "POST" ? {} : undefined });
      expect(res.status, `${r.method} ${r.path}`).toBe(403);
      expect(res.body.error_code).toBe("insufficient_scope");
      expect(String(res.body.error)).toContain(r.scope as string);
    }
    await drained();
    expect(forwarded()).toEqual([]);
  });

  it("lets a key with the scope (or with no scope list) through to the owning service", async () => {
    const unscoped = stack.testKey;
    for (const r of ROUTES.filter((x) => x.scope !== null)) {
      const scopedKey = (await stack.key({ scopes: [r.scope as Scope] })).api_key;
      for (const key of [scopedKey, unscoped]) {
        const res = await call(stack.baseUrl, r.method, concretePath(r), { key, body: r.method === "POST" ? {} : undefined });
        expect(res.status, `${r.method} ${r.path}`).not.toBe(403);
        expect(res.status).not.toBe(401);
        expect(res.status, `${r.method} ${r.path}`).toBeLessThan(500);
      }
    }
  });
});

describe("sandbox and live", () => {
  it("forwards the environment of the key: test keys act in sandbox, live keys in live, for the same org", async () => {
    seen.length = 0;
    await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.testKey });
    await call(stack.baseUrl, "GET", "/v1/participants", { key: stack.liveKey });
    await drained();
    const auths = forwarded()
      .filter((m) => m.subject.endsWith("svc.ledger.listParticipants"))
      .map((m) => m.data.auth as { livemode: boolean; org_id: string });
    expect(auths).toEqual([
      expect.objectContaining({ livemode: false, org_id: stack.orgId }),
      expect.objectContaining({ livemode: true, org_id: stack.orgId }),
    ]);
  });
});
