// Proves the per-key token buckets: 429 with Retry-After and retry_after, the headers on every answer, per-org overrides, exactness in one process, sharing across replicas through a real Redis, the per-IP limit on failed authentications, and separate buckets for deployments (NATS_PREFIX) sharing one Redis.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import { buildGateway, type Gateway } from "../../services/gateway/src/service.ts";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { buildLedger } from "../../services/ledger/src/service.ts";
import type { Service } from "@treasury/service-kit";
import { call } from "./stack.ts";

let env: TestEnv;
let ledger: Service;
const gateways: Gateway[] = [];
const url = (g: Gateway) => `http://127.0.0.1:${g.ports.main}`;

async function gateway(extra: Record<string, string> = {}): Promise<Gateway> {
  const g = await buildGateway({ ...env.env("gateway"), PORT: "0", ALT_PORT: "0", ...extra });
  gateways.push(g);
  return g;
}

async function orgWithLimits(limits: Record<string, { capacity: number; refill_per_sec: number }>): Promise<string> {
  const { org_id } = await createOrg(env.adminSql, { name: "limited" });
  await env.adminSql`update gateway.orgs set rate_limits = ${env.adminSql.json(limits)} where id = ${org_id}`;
  return (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
}

beforeAll(async () => {
  env = await setupTestEnv();
  ledger = await buildLedger(env.env("ledger"));
  await ledger.start();
});
afterAll(async () => {
  for (const g of gateways) await g.stop();
  await ledger?.stop();
  await env?.cleanup();
});

describe("rate limits", () => {
  it("allows exactly the bucket's capacity in one process, then 429 with Retry-After, retry_after and the headers", async () => {
    const g = await gateway();
    const key = await orgWithLimits({ read: { capacity: 5, refill_per_sec: 0.01 } });
    const answers = await Promise.all(Array.from({ length: 12 }, () => call(url(g), "GET", "/v1/participants", { key })));
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.length - limited.length).toBe(5);
    expect(limited.length).toBe(7);
    for (const a of answers) {
      expect(a.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/);
      expect(Number(a.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000 - 1);
    }
    const one = limited[0]!;
    expect(one.body).toMatchObject({ success: false, error_code: "rate_limited" });
    expect(Number(one.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(one.body.retry_after).toBe(Number(one.headers.get("retry-after")));
    expect(one.headers.get("x-ratelimit-remaining")).toBe("0");
    // Other classes have their own buckets.
    const write = await call(url(g), "POST", "/v1/participants", { key, body: {} });
    expect(write.status).not.toBe(429);
  });

  it("counts the remaining tokens down on successive answers", async () => {
    const g = await gateway();
    const key = await orgWithLimits({ read: { capacity: 10, refill_per_sec: 0.01 } });
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) seen.push(Number((await call(url(g), "GET", "/v1/participants", { key })).headers.get("x-ratelimit-remaining")));
    expect(seen).toEqual([9, 8, 7]);
  });

  it("shares one bucket across gateway replicas through Redis", async () => {
    const a = await gateway({ REDIS_URL: env.redisUrl });
    const b = await gateway({ REDIS_URL: env.redisUrl });
    const key = await orgWithLimits({ treasury_write: { capacity: 4, refill_per_sec: 0.01 } });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call(url(i % 2 === 0 ? a : b), "POST", `/v1/holds/hold_x${i}/release`, { key, body: {} })),
    );
    expect(results.filter((r) => r.status !== 429).length).toBe(4);
    expect(results.filter((r) => r.status === 429).length).toBe(6);
  });

  it("limits failed authentications per client IP; past the budget a key already known still passes, no other is read", async () => {
    // The keys exist before the gateway starts: a key's creation notifies every gateway to forget its cache, and
    // that notice arriving after `good` was cached would make it a key to read again. A long cache life keeps a
    // slow run's `good` cached too.
    const { org_id } = await createOrg(env.adminSql, { name: "ip" });
    const good = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
    const unseen = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
    const g = await gateway({ AUTH_FAILURES_PER_MIN: "5", AUTH_CACHE_TTL_MS: "60000" });
    // Read (and cached) before the budget runs out; a valid key gives back the token its read took.
    expect((await call(url(g), "GET", "/v1/participants", { key: good })).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await call(url(g), "GET", "/v1/participants", { key: `slk_test_${"Z".repeat(31)}${i}` })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const blocked = await call(url(g), "GET", "/v1/participants", { key: `slk_test_${"Z".repeat(31)}q` });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error_code).toBe("auth_rate_limited");
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Behind a proxy every client shares the IP: a key the gateway already knows still passes (no read needed).
    expect((await call(url(g), "GET", "/v1/participants", { key: good })).status).toBe(200);
    expect((await call(url(g), "GET", "/v1/participants", { key: good })).status).toBe(200);
    // A key it would have to read waits for the budget like any other: the database is not asked.
    const refused = await call(url(g), "GET", "/v1/participants", { key: unseen });
    expect(refused.status).toBe(429);
    expect(refused.body.error_code).toBe("auth_rate_limited");

    // A replica of the same deployment (same NATS_PREFIX, same Redis) refuses this IP too; a deployment with
    // another prefix on the same Redis has its own budget (test files running in parallel are such deployments).
    const replica = await gateway({ AUTH_FAILURES_PER_MIN: "5" });
    expect((await call(url(replica), "GET", "/v1/participants", { key: `slk_test_${"Z".repeat(31)}x` })).status).toBe(429);
    const other = await gateway({ AUTH_FAILURES_PER_MIN: "5", NATS_PREFIX: `${env.prefix}other.` });
    expect((await call(url(other), "GET", "/v1/participants", { key: `slk_test_${"Z".repeat(31)}y` })).status).toBe(401);
  });

  it("counts concurrent failures atomically: 70 bad keys at once against a budget of 60 give 60 × 401 and 10 × 429", async () => {
    const g = await gateway({ AUTH_FAILURES_PER_MIN: "60", NATS_PREFIX: `${env.prefix}burst.` });
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        call(url(g), "GET", "/v1/participants", { key: `slk_test_${"B".repeat(28)}${String(i).padStart(4, "0")}` }).then((r) => r.status),
      ),
    );
    // The budget earns back one failure a second: a slow machine may spread the 70 over a few seconds, and each
    // whole second may admit one more 401, never more.
    const refilled = Math.floor((Date.now() - started) / 1000);
    const unauthorized = statuses.filter((x) => x === 401).length;
    expect(unauthorized).toBeGreaterThanOrEqual(60);
    expect(unauthorized).toBeLessThanOrEqual(60 + refilled);
    expect(statuses.filter((x) => x === 429)).toHaveLength(70 - unauthorized);
  });
});
