// Payments as a real process and with non-default configuration: crash recovery of checkout completion (killed
// with -9 between the ledger post and the settle step, restarted, the reconciler finishes: money once, event
// once), and the Stripe Checkout adapter when credentials are configured (against a local stand-in of its API).
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPayments } from "../../services/payments/src/service.ts";
import { freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv } from "@treasury/testing";
import { call, startStack, type Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
const children: SpawnedService[] = [];

async function startPayments(extra: Record<string, string>, entry?: string): Promise<SpawnedService> {
  const child = spawnService(
    "payments",
    env.env("payments", { HEALTH_PORT: String(await freePort()), LOG_LEVEL: "warn", ...extra }),
    entry === undefined ? {} : { entry },
  );
  children.push(child);
  await child.ready;
  return child;
}

beforeAll(async () => {
  env = await setupTestEnv();
  // Gateway and ledger in this process; payments is a real child process the test can kill.
  s = await startStack({ env, services: ["ledger"], gatewayEnv: { RPC_TIMEOUT_MS: "3000" } });
});
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await s?.stop();
  await env?.cleanup();
});

async function count(sql: TemplateStringsArray, ...args: string[]): Promise<number> {
  const rows = (await env.adminSql(sql, ...args)) as unknown as { n: string }[];
  return Number(rows[0]?.n ?? 0);
}

describe("crash between ledger post and settle", () => {
  // Proves kill -9 after the ledger post leaves the session `completing`; after restart the reconciler settles it exactly once.
  // Two process starts (tsx) dominate the time; on a loaded 2-core machine they can take several seconds each.
  it("recovers through the reconciler", { timeout: 120_000 }, async () => {
    const crashing = await startPayments({ PAYMENTS_RECONCILE_INTERVAL_MS: "600000" }, "tests/e2e/fixtures/payments-crash-after-post.ts");
    const pid = `crash_creator_${Date.now().toString(36)}`;
    expect((await call(s.baseUrl, "POST", "/v1/participants", { key: s.testKey, body: { participant_id: pid, default_split_percent: 60 } })).status).toBe(201);
    const created = await call(s.baseUrl, "POST", "/v1/checkout-sessions", { key: s.testKey, body: { participant_id: pid, amount: 12_345 } });
    expect(created.status).toBe(201);
    const id = String((created.body["checkout_session"] as Record<string, unknown>)["id"]);
    const ref = `checkout:${id}`;

    const inFlight = call(s.baseUrl, "POST", `/v1/sandbox/checkouts/${id}/complete`, { key: s.testKey, body: { idempotency_key: "crash-1" } });
    await waitFor(() => crashing.output().some((l) => l.includes("PAYMENTS_CRASH_POINT_REACHED")), { timeoutMs: 15_000 });
    // At the crash point: the sale is in the ledger, the session is not settled, no event exists.
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`).toBe(1);
    expect(await count`select count(*)::text as n from payments.checkout_sessions where id = ${id} and status = 'completing'`).toBe(1);
    expect(await count`select count(*)::text as n from payments.outbox where type = 'checkout.completed'`).toBe(0);

    crashing.kill("SIGKILL");
    expect((await crashing.exited).signal).toBe("SIGKILL");
    // The client was told "outcome unknown", never "failed".
    expect([503, 504]).toContain((await inFlight).status);

    await startPayments({ PAYMENTS_RECONCILE_INTERVAL_MS: "100", PAYMENTS_RECONCILE_GRACE_MS: "0" });
    await waitFor(async () => (await count`select count(*)::text as n from payments.checkout_sessions where id = ${id} and status = 'completed'`) === 1, {
      timeoutMs: 15_000,
    });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`).toBe(1);
    expect(
      await count`select count(*)::text as n from payments.outbox where type = 'checkout.completed' and payload->'data'->>'checkout_session_id' = ${id}`,
    ).toBe(1);

    // A client retry now reads the settled session; still one movement and one event.
    const retry = await call(s.baseUrl, "POST", `/v1/sandbox/checkouts/${id}/complete`, { key: s.testKey, body: { idempotency_key: "crash-1" } });
    expect(retry.status).toBe(200);
    expect(retry.body["checkout_session"]).toMatchObject({ status: "completed", sale_reference: ref });
    const wallets = await call(s.baseUrl, "GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, { key: s.testKey });
    expect((wallets.body["wallets"] as Record<string, unknown>[])[0]).toMatchObject({ balance: 7407 });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`).toBe(1);
    expect(await count`select count(*)::text as n from payments.outbox where type = 'checkout.completed'`).toBe(1);
    for (const c of children) c.kill("SIGKILL");
    await Promise.all(children.map((c) => c.exited));
  });
});

describe("stripe provider with credentials", () => {
  // Proves a configured Stripe adapter creates a Stripe Checkout session (form-encoded, bearer key, idempotency key) and returns its URL.
  it("returns the Stripe checkout_url", async () => {
    const seen: { auth?: string | undefined; idem?: string; form?: URLSearchParams } = {};
    const stripe = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        seen.auth = req.headers.authorization;
        seen.idem = String(req.headers["idempotency-key"]);
        seen.form = new URLSearchParams(body);
        res.writeHead(req.url === "/v1/checkout/sessions" ? 200 : 404, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: "cs_test_abc", url: "https://checkout.stripe.test/c/pay/cs_test_abc" }));
      });
    });
    await new Promise<void>((r) => stripe.listen(0, "127.0.0.1", r));
    const addr = stripe.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    const payments = await buildPayments(env.env("payments", { STRIPE_SECRET_KEY: "sk_test_stand_in", STRIPE_API_BASE: `http://127.0.0.1:${port}` }));
    await payments.start();
    try {
      const pid = `stripe_creator_${Date.now().toString(36)}`;
      expect((await call(s.baseUrl, "POST", "/v1/participants", { key: s.testKey, body: { participant_id: pid } })).status).toBe(201);
      const r = await call(s.baseUrl, "POST", "/v1/checkout-sessions", {
        key: s.testKey,
        body: { participant_id: pid, amount: 2500, product_name: "Album", sandbox_checkout_provider: "stripe", success_url: "https://shop.example/ok" },
      });
      expect(r.status).toBe(201);
      const cs = r.body["checkout_session"] as Record<string, string>;
      expect(cs).toMatchObject({
        provider: "stripe",
        status: "pending",
        checkout_url: "https://checkout.stripe.test/c/pay/cs_test_abc",
        payment_id: "cs_test_abc",
      });
      expect(seen.auth).toBe("Bearer sk_test_stand_in");
      expect(seen.idem).toBe(`cs_${cs["id"]}`);
      expect(seen.form?.get("line_items[0][price_data][unit_amount]")).toBe("2500");
      expect(seen.form?.get("client_reference_id")).toBe(cs["id"]);
      expect(seen.form?.get("success_url")).toBe(`https://shop.example/ok?checkout_session_id=${cs["id"]}`);
      const direct = await call(s.baseUrl, "POST", "/v1/checkout-sessions", {
        key: s.testKey,
        body: { participant_id: pid, amount: 100, sandbox_checkout_provider: "stripe", payment_method_id: "pm_card_visa" },
      });
      expect(direct.status).toBe(422);
      expect(direct.body["error_code"]).toBe("provider_not_configured");
    } finally {
      await payments.stop();
      await new Promise<void>((r) => stripe.close(() => r()));
    }
  });
});
