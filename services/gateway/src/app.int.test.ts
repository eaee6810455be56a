// The public app through fastify.inject on a real NATS: the client IP behind the trusted proxy (a client's own
// X-Forwarded-For entries change neither its rate-limit buckets nor what a hosted page records), access-log
// lines without ids, query strings, keys or row values, and no key read once an IP is past its failed-auth budget.
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import postgres from "postgres";
import { createLogger } from "@treasury/service-kit";
import { rpcSubject } from "@treasury/contracts";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "./admin.ts";
import { buildPublicApp } from "./app.ts";
import { Authenticator, type KeyRecord, type KeyStore } from "./auth.ts";
import { MemoryRateLimiter, type BucketRule } from "./ratelimit.ts";

let env: TestEnv;
const apps: FastifyInstance[] = [];
const authenticators: Authenticator[] = [];

beforeAll(async () => {
  env = await setupTestEnv();
});

afterAll(async () => {
  for (const a of apps) await a.close();
  for (const a of authenticators) await a.stop();
  await env?.cleanup();
});

/** The ingress controller's pod range, as the k8s manifests trust it. */
const TRUSTED = ["10.244.0.0/16"];
const INGRESS_POD = "10.244.3.17";

/** An in-memory key store that counts its key reads; `fail` makes every read throw it, `readMs` makes reads take that long. */
function countingStore(): KeyStore & { reads: number; keys: Map<string, KeyRecord>; fail: Error | undefined; readMs: number } {
  const store = {
    reads: 0,
    keys: new Map<string, KeyRecord>(),
    fail: undefined as Error | undefined,
    readMs: 0,
    async findKey(hash: string): Promise<KeyRecord | null> {
      store.reads += 1;
      if (store.readMs > 0) await new Promise((resolve) => setTimeout(resolve, store.readMs));
      if (store.fail) throw store.fail;
      return store.keys.get(hash) ?? null;
    },
    maintenance: () => Promise.resolve({ enabled: false, retry_after_s: 0, message: "" }),
    watch: () => Promise.resolve(() => Promise.resolve()),
  };
  return store;
}

/** A key of an active org whose scope list is empty: it authenticates, then fails every scope check. */
function scopelessKey(store: ReturnType<typeof countingStore>, presented: string): void {
  store.keys.set(hashApiKey(presented), {
    keyId: "key_scopeless",
    orgId: "org_1",
    livemode: false,
    scopes: [],
    orgStatus: "active",
    expiresAt: null,
    revoked: false,
    rateOverrides: {},
  });
}

interface Built {
  app: FastifyInstance;
  store: ReturnType<typeof countingStore>;
  buckets: string[];
  lines: Record<string, unknown>[];
}

async function built(opts: { alt?: boolean; authFailuresPerMin?: number; cacheTtlMs?: number; limiterMs?: number } = {}): Promise<Built> {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const store = countingStore();
  const authenticator = new Authenticator(store, opts.cacheTtlMs ?? 60_000);
  await authenticator.start();
  authenticators.push(authenticator);
  const buckets: string[] = [];
  const memory = new MemoryRateLimiter();
  const limiter = {
    take: (key: string, rule: BucketRule, cost?: number) => {
      buckets.push(key);
      // A limiter that answers later, as Redis does, or at once, as the in-memory one does.
      if (opts.limiterMs === undefined) return memory.take(key, rule, cost);
      const taken = memory.take(key, rule, cost);
      return new Promise<typeof taken>((resolve) => setTimeout(() => resolve(taken), opts.limiterMs));
    },
    close: () => memory.close(),
  };
  const app = await buildPublicApp(
    {
      nc: await env.nats(),
      prefix: env.prefix,
      log: createLogger({ service: "gateway", level: "info", destination }),
      authenticator,
      limiter,
      rpcTimeoutMs: 300,
      healthTimeoutMs: 300,
      authFailuresPerMin: opts.authFailuresPerMin ?? 60,
      trustProxy: TRUSTED,
      dbPing: () => Promise.resolve(),
      altBaseUrl: () => "http://alt.test",
    },
    { alt: opts.alt ?? false },
  );
  apps.push(app);
  return { app, store, buckets, lines };
}

const badKey = (i: number) => `slk_test_${"Z".repeat(28)}${String(i).padStart(4, "0")}`;

describe("the client IP behind the trusted proxy", () => {
  it("keys the anonymous bucket by the address the ingress wrote, whatever the client put before it", async () => {
    const { app, buckets } = await built();
    for (const spoofed of ["6.6.6.6", "10.244.9.9", "127.0.0.1, 1.1.1.1"]) {
      const r = await app.inject({
        method: "GET",
        url: "/v1/openapi.json",
        remoteAddress: INGRESS_POD,
        headers: { "x-forwarded-for": `${spoofed}, 203.0.113.7` },
      });
      expect(r.statusCode).toBe(200);
    }
    expect(new Set(buckets)).toEqual(new Set(["anon:203.0.113.7"]));
  });

  it("ignores X-Forwarded-For from a peer outside the trusted range", async () => {
    const { app, buckets } = await built();
    await app.inject({ method: "GET", url: "/v1/openapi.json", remoteAddress: "198.51.100.9", headers: { "x-forwarded-for": "203.0.113.7" } });
    expect(buckets).toEqual(["anon:198.51.100.9"]);
  });

  it("spends one failed-auth budget per client however it varies its own X-Forwarded-For entries", async () => {
    const { app } = await built({ authFailuresPerMin: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await app.inject({
        method: "GET",
        url: "/v1/participants",
        remoteAddress: INGRESS_POD,
        headers: { "x-api-key": badKey(i), "x-forwarded-for": `192.0.2.${i}, 203.0.113.8` },
      });
      statuses.push(r.statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it("hands a hosted page the client's address as the ingress saw it", async () => {
    const { app } = await built({ alt: true });
    const nc = await env.nats();
    const seen: Record<string, unknown>[] = [];
    const sub = nc.subscribe(rpcSubject(env.prefix, "payments", "page.checkout"), { callback: (_e, m) => void seen.push(m.json<Record<string, unknown>>()) });
    await nc.flush();
    try {
      await app.inject({
        method: "GET",
        url: "/v1/checkout/cs_1",
        remoteAddress: INGRESS_POD,
        headers: { "x-forwarded-for": "6.6.6.6, 203.0.113.9" },
      });
      await waitFor(() => seen.length > 0, { timeoutMs: 5_000 });
      expect(seen[0]).toMatchObject({ client_ip: "203.0.113.9" });
    } finally {
      sub.unsubscribe();
    }
  });
});

describe("access logs", () => {
  it("log a hosted page request by its route pattern: no capability id, no query string", async () => {
    const { app, lines } = await built({ alt: true });
    const id = "0b5f3a9e-6c1d-4f7a-9a42-secretpageid";
    await app.inject({ method: "GET", url: `/v1/checkout/${id}?session_hint=query-secret-value`, remoteAddress: INGRESS_POD });
    const access = await waitFor(() => lines.find((l) => l["msg"] === "request completed") ?? false, { timeoutMs: 5_000 });
    expect(access).toMatchObject({ method: "GET", route: "/v1/checkout/:checkout_id" });
    expect(access).not.toHaveProperty("url");
    const text = JSON.stringify(lines);
    expect(text).not.toContain("secretpageid");
    expect(text).not.toContain("query-secret-value");
  });

  it("log an API request by its route pattern, with neither its query string nor its x-api-key", async () => {
    const { app, lines } = await built();
    const key = badKey(77);
    await app.inject({ method: "GET", url: "/v1/participants?email=jane@example.com", remoteAddress: INGRESS_POD, headers: { "x-api-key": key } });
    const access = await waitFor(() => lines.find((l) => l["msg"] === "request completed") ?? false, { timeoutMs: 5_000 });
    expect(access).toMatchObject({ method: "GET", route: "/v1/participants", status: 401 });
    const text = JSON.stringify(lines);
    expect(text).not.toContain("jane@example.com");
    expect(text).not.toContain(key);
  });

  it("log a failed key read without the PostgresError's detail (row values)", async () => {
    const { app, store, lines } = await built();
    const PgError = postgres.PostgresError as unknown as new (fields: Record<string, string>) => Error;
    store.fail = new PgError({ message: "boom", code: "XX000", detail: "Key (key_hash)=(row-value-secret) is odd." });
    const r = await app.inject({ method: "GET", url: "/v1/participants", remoteAddress: INGRESS_POD, headers: { "x-api-key": badKey(88) } });
    expect(r.statusCode).toBe(500);
    const failure = await waitFor(() => lines.find((l) => l["msg"] === "unhandled error") ?? false, { timeoutMs: 5_000 });
    expect(failure).toMatchObject({ err: { type: "PostgresError", code: "XX000" } });
    expect(JSON.stringify(lines)).not.toContain("row-value-secret");
  });
});

describe("past the failed-auth budget", () => {
  it("answers 429 without reading any key, while a key already known still authenticates", async () => {
    const { app, store } = await built({ authFailuresPerMin: 3 });
    const known = `slk_test_${"K".repeat(32)}`;
    scopelessKey(store, known);
    const ask = (key: string) =>
      app.inject({ method: "GET", url: "/v1/participants", remoteAddress: INGRESS_POD, headers: { "x-api-key": key, "x-forwarded-for": "203.0.113.10" } });
    // The known key is read once (and cached); it spends no budget.
    expect((await ask(known)).json()).toMatchObject({ error_code: "insufficient_scope" });
    expect(store.reads).toBe(1);
    for (let i = 0; i < 3; i++) expect((await ask(badKey(i))).statusCode).toBe(401);
    expect(store.reads).toBe(4);

    const limited: number[] = [];
    for (let i = 3; i < 13; i++) limited.push((await ask(badKey(i))).statusCode);
    expect(limited).toEqual(Array(10).fill(429));
    expect(store.reads).toBe(4);
    // Authentication of a cached key needs no read, so the budget does not stand in its way.
    expect((await ask(known)).json()).toMatchObject({ error_code: "insufficient_scope" });
    expect(store.reads).toBe(4);
  });

  it.each([
    ["at once", undefined],
    ["over a round trip (Redis)", 50],
  ])(
    "lets a burst of one valid key the cache does not hold through whatever its size, its limiter answering %s: the burst shares one read",
    async (_, limiterMs) => {
      const { app, store } = await built({ authFailuresPerMin: 3, ...(limiterMs === undefined ? {} : { limiterMs }) });
      const known = `slk_test_${"B".repeat(32)}`;
      scopelessKey(store, known);
      // A read as slow as a busy database's: every request of the burst arrives while it runs.
      store.readMs = 200;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          app.inject({
            method: "GET",
            url: "/v1/participants",
            remoteAddress: INGRESS_POD,
            headers: { "x-api-key": known, "x-forwarded-for": "203.0.113.12" },
          }),
        ),
      );
      expect(answers.map((a) => (a.json() as { error_code: string }).error_code)).toEqual(Array(20).fill("insufficient_scope"));
      expect(store.reads).toBe(1);
    },
  );

  it("does not refresh a stale failed lookup either: past its TTL a bad or revoked key needs a budget token to be read again", async () => {
    const ttlMs = 400;
    const { app, store } = await built({ authFailuresPerMin: 2, cacheTtlMs: ttlMs });
    const revoked = `slk_test_${"R".repeat(32)}`;
    scopelessKey(store, revoked);
    store.keys.set(hashApiKey(revoked), { ...store.keys.get(hashApiKey(revoked))!, revoked: true });
    const ask = (key: string) =>
      app.inject({ method: "GET", url: "/v1/participants", remoteAddress: INGRESS_POD, headers: { "x-api-key": key, "x-forwarded-for": "203.0.113.11" } });
    expect((await ask(badKey(1))).statusCode).toBe(401);
    expect((await ask(revoked)).statusCode).toBe(401);
    const cachedAt = Date.now();
    expect(store.reads).toBe(2);
    // Both entries past their TTL, and still within the grace period (a further TTL) in which a valid key's
    // entry answers while it is refreshed.
    await waitFor(() => Date.now() > cachedAt + ttlMs, { timeoutMs: 2_000, intervalMs: 10 });
    expect((await ask(badKey(1))).statusCode).toBe(429);
    expect((await ask(revoked)).statusCode).toBe(429);
    expect(store.reads).toBe(2);
  });
});
