// The API-key cache on a real PostgreSQL: one read per key at a time however many requests need it, an entry
// just past its TTL answered while one read refreshes it, and nothing read before an admin change (or a lost
// LISTEN connection) kept afterwards.
import postgres from "postgres";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH_CHANGED_CHANNEL, createApiKey, createOrg, revokeApiKey } from "./admin.ts";
import { Authenticator, type AuthResult } from "./auth.ts";
import { pgKeyStore } from "./key-store.ts";

let env: TestEnv;
let sql: postgres.Sql;
/** Key reads made through `counted`, and how long the next ones are held back before they answer. */
/** Key reads seen; while `gate` is set, each read's rows wait for it (counted in `held`) before they are returned. */
const reads: { count: number; held: number; gate: Promise<void> | undefined } = { count: 0, held: 0, gate: undefined };
let counted: postgres.Sql;
const authenticators: Authenticator[] = [];
/** Admin-change notifications seen on the authenticators' own LISTEN connection (they see each one first). */
let notifications = 0;

beforeAll(async () => {
  env = await setupTestEnv();
  sql = postgres(env.dbUrl("gateway"), { max: 4, onnotice: () => {} });
  counted = new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const query = Reflect.apply(target, thisArg, args) as Promise<unknown>;
      const strings = args[0] as readonly string[] | undefined;
      if (!Array.isArray(strings) || !strings.join("").includes("gateway.api_keys")) return query;
      reads.count += 1;
      const gate = reads.gate;
      if (gate === undefined) return query;
      return query.then(async (rows) => {
        reads.held += 1;
        await gate;
        return rows;
      });
    },
  });
  await sql.listen(AUTH_CHANGED_CHANNEL, () => void (notifications += 1));
});

/** Makes an admin change and waits until its notification has reached the authenticators. */
async function announced<T>(change: () => Promise<T>): Promise<T> {
  const before = notifications;
  const result = await change();
  await waitFor(() => notifications > before);
  return result;
}

afterAll(async () => {
  for (const a of authenticators) await a.stop();
  await sql?.end({ timeout: 5 });
  await env?.cleanup();
});

async function started(ttlMs: number): Promise<Authenticator> {
  const a = new Authenticator(pgKeyStore(counted), ttlMs);
  await a.start();
  authenticators.push(a);
  return a;
}

async function newKey(): Promise<{ api_key: string; key_id: string }> {
  const { org_id } = await createOrg(env.adminSql, { name: "cache test" });
  return announced(() => createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null }));
}

const code = (r: AuthResult) => (r.ok ? "ok" : r.code);

describe("Authenticator cache", () => {
  it("reads a key once however many requests need it at the same time", async () => {
    const auth = await started(5_000);
    const { api_key } = await newKey();
    const before = reads.count;
    const results = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(api_key)));
    expect(results.map(code)).toEqual(Array(50).fill("ok"));
    expect(reads.count - before).toBe(1);
  });

  it("answers from an entry less than a TTL past its expiry while one read refreshes it, and waits for a read after that", async () => {
    const auth = await started(1_000);
    const { api_key } = await newKey();
    const t0 = Date.now();
    expect(code(await auth.authenticate(api_key, t0))).toBe("ok");
    const before = reads.count;

    // Expired 0.5 s ago: every request is answered at once (no promise), and one read refreshes the entry.
    const stale = Array.from({ length: 20 }, () => auth.authenticate(api_key, t0 + 1_500));
    expect(stale.every((r) => !(r instanceof Promise) && r.ok)).toBe(true);
    // The refreshed entry lasts a TTL from the refresh (until then a request this late joins the running read).
    await waitFor(() => !(auth.authenticate(api_key, t0 + 2_400) instanceof Promise), { timeoutMs: 5_000 });
    expect(reads.count - before).toBe(1);

    // More than a TTL past its expiry: the request waits for the database.
    const late = auth.authenticate(api_key, t0 + 10_000);
    expect(late).toBeInstanceOf(Promise);
    expect(code(await late)).toBe("ok");
  });

  it("does not cache what a read saw before an admin change that arrived while it ran", async () => {
    const auth = await started(60_000);
    const { api_key, key_id } = await newKey();
    let open = (): void => {};
    reads.gate = new Promise<void>((r) => (open = r));
    const heldBefore = reads.held;
    const inFlight = auth.authenticate(api_key);
    try {
      // The read has its (still active) row and is held; the key is revoked and the change announced meanwhile.
      await waitFor(() => reads.held > heldBefore);
      await announced(() => revokeApiKey(env.adminSql, key_id));
    } finally {
      reads.gate = undefined;
      open();
    }
    // The request that was already being authenticated may pass (it started before the revocation) …
    expect(code(await inFlight)).toBe("ok");
    // … but the next one reads the key again and is refused.
    expect(code(await auth.authenticate(api_key))).toBe("invalid_api_key");
  });

  it("forgets every key when its LISTEN connection is lost and subscribes again (notifications may have been missed)", async () => {
    const auth = await started(60_000);
    const { api_key } = await newKey();
    expect(code(await auth.authenticate(api_key))).toBe("ok");
    expect(auth.authenticate(api_key)).not.toBeInstanceOf(Promise);
    // The gateway role's LISTEN connection (not this test's own, which runs as the superuser).
    const killed = await env.adminSql`
      select pg_terminate_backend(pid) from pg_stat_activity
       where datname = ${env.database} and usename = 'gateway_svc' and query ilike 'listen%'`;
    expect(killed.length).toBeGreaterThan(0);
    await waitFor(() => auth.authenticate(api_key) instanceof Promise, { timeoutMs: 10_000 });
  });
});
