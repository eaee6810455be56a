// Refunds as a real process killed with -9 at each step of "Money across services": between the intent and
// the ledger post (a direct refund), and between the ledger post and the settle step (an approved refund
// request). After a restart the reconciler finishes each one: the money moves exactly once, each event is
// written once, the client was told "outcome unknown" and its retry reads the outcome.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv } from "@treasury/testing";
import { call, startStack, type Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
const children: SpawnedService[] = [];

async function startRefunds(extra: Record<string, string>, entry?: string): Promise<SpawnedService> {
  const child = spawnService(
    "refunds",
    env.env("refunds", { HEALTH_PORT: String(await freePort()), LOG_LEVEL: "warn", ...extra }),
    entry === undefined ? {} : { entry },
  );
  children.push(child);
  await child.ready;
  return child;
}

async function stopAll(): Promise<void> {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  children.length = 0;
}

beforeAll(async () => {
  env = await setupTestEnv();
  // Gateway, ledger and payments in this process; refunds is a real child process the test can kill.
  s = await startStack({ env, services: ["ledger", "payments"], gatewayEnv: { RPC_TIMEOUT_MS: "3000" } });
}, 60_000);
afterAll(async () => {
  await stopAll();
  await s?.stop();
  await env?.cleanup();
});

async function count(sql: TemplateStringsArray, ...args: string[]): Promise<number> {
  const rows = (await env.adminSql(sql, ...args)) as unknown as { n: string }[];
  return Number(rows[0]?.n ?? 0);
}

/** A completed sandbox checkout of 10,000 with a 60 % creator share: its sale reference and creator. */
async function sale(): Promise<{ saleReference: string; creator: string }> {
  const creator = `crash_creator_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  expect((await call(s.baseUrl, "POST", "/v1/participants", { key: s.testKey, body: { participant_id: creator, default_split_percent: 60 } })).status).toBe(
    201,
  );
  const created = await call(s.baseUrl, "POST", "/v1/checkout-sessions", { key: s.testKey, body: { participant_id: creator, amount: 10_000 } });
  const id = String((created.body["checkout_session"] as Record<string, unknown>)["id"]);
  expect((await call(s.baseUrl, "POST", `/v1/sandbox/checkouts/${id}/complete`, { key: s.testKey, body: {} })).status).toBe(200);
  return { saleReference: `checkout:${id}`, creator };
}

async function creatorBalance(creator: string): Promise<number> {
  const r = await call(s.baseUrl, "GET", `/v1/participants/${creator}`, { key: s.testKey });
  return Number((r.body["participant"] as Record<string, unknown>)["ledger_balance_cents"]);
}

describe("kill -9 of the refunds process", () => {
  // Proves a crash after the intent leaves a pending refund and no ledger movement; the reconciler posts and settles it once.
  it("between the intent and the ledger post", { timeout: 120_000 }, async () => {
    const { saleReference, creator } = await sale();
    const crashing = await startRefunds({ REFUNDS_RECONCILE_INTERVAL_MS: "600000" }, "tests/e2e/fixtures/refunds-crash-after-intent.ts");
    const body = { original_sale_reference: saleReference, amount: 2_500, reason: "crash test", idempotency_key: "crash-intent-1" };
    const inFlight = call(s.baseUrl, "POST", "/v1/refunds", { key: s.testKey, body });
    await waitFor(() => crashing.output().some((l) => l.includes("REFUNDS_CRASH_POINT_REACHED")), { timeoutMs: 15_000 });
    expect(await count`select count(*)::text as n from refunds.refunds where sale_reference = ${saleReference} and status = 'pending'`).toBe(1);
    expect(await count`select count(*)::text as n from ledger.transactions where kind = 'refund' and reference_id like 'refund:%'`).toBe(0);

    crashing.kill("SIGKILL");
    expect((await crashing.exited).signal).toBe("SIGKILL");
    expect([503, 504]).toContain((await inFlight).status);

    await startRefunds({ REFUNDS_RECONCILE_INTERVAL_MS: "100", REFUNDS_RECONCILE_GRACE_MS: "0" });
    await waitFor(
      async () => (await count`select count(*)::text as n from refunds.refunds where sale_reference = ${saleReference} and status = 'completed'`) === 1,
      { timeoutMs: 15_000 },
    );
    const [row] = await env.adminSql<{ id: string }[]>`select id from refunds.refunds where sale_reference = ${saleReference}`;
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${`refund:${row?.id ?? ""}`}`).toBe(1);
    expect(await count`select count(*)::text as n from refunds.outbox where type = 'refund.created' and payload->'data'->>'id' = ${row?.id ?? ""}`).toBe(1);

    const retry = await call(s.baseUrl, "POST", "/v1/refunds", { key: s.testKey, body });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ idempotent: true, refund: { id: row?.id, status: "completed", refunded_amount_cents: 2_500 } });
    // 60 % of 10,000 earned, 60 % of 2,500 taken back, once.
    expect(await creatorBalance(creator)).toBe(6_000 - 1_500);
    expect(await count`select count(*)::text as n from refunds.refunds where sale_reference = ${saleReference}`).toBe(1);
    await stopAll();
  });

  // Proves a crash after the ledger post leaves the approved request processing; the reconciler settles refund and request once.
  it("between the ledger post and the settle step, for an approved refund request", { timeout: 120_000 }, async () => {
    const { saleReference, creator } = await sale();
    const crashing = await startRefunds({ REFUNDS_RECONCILE_INTERVAL_MS: "600000" }, "tests/e2e/fixtures/refunds-crash-after-post.ts");
    const created = await call(s.baseUrl, "POST", "/v1/refund-requests", {
      key: s.testKey,
      body: { sale_reference: saleReference, customer_id: "buyer_crash", reason: "never arrived" },
    });
    expect(created.status).toBe(201);
    const id = String((created.body["refund_request"] as Record<string, unknown>)["id"]);
    const ref = `refund_request:${id}`;
    const inFlight = call(s.baseUrl, "POST", `/v1/refund-requests/${id}/approve`, { key: s.testKey, body: { reviewed_by_actor: "ops" } });
    await waitFor(() => crashing.output().some((l) => l.includes("REFUNDS_CRASH_POINT_REACHED")), { timeoutMs: 15_000 });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`).toBe(1);
    expect(await count`select count(*)::text as n from refunds.refund_requests where id = ${id} and status = 'processing'`).toBe(1);
    expect(await count`select count(*)::text as n from refunds.outbox where type in ('refund.created', 'refund_request.completed')`).toBe(1);

    crashing.kill("SIGKILL");
    expect((await crashing.exited).signal).toBe("SIGKILL");
    expect([503, 504]).toContain((await inFlight).status);
    await startRefunds({ REFUNDS_RECONCILE_INTERVAL_MS: "100", REFUNDS_RECONCILE_GRACE_MS: "0" });
    await waitFor(async () => (await count`select count(*)::text as n from refunds.refund_requests where id = ${id} and status = 'completed'`) === 1, {
      timeoutMs: 15_000,
    });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`).toBe(1);
    expect(await count`select count(*)::text as n from refunds.outbox where type = 'refund_request.completed' and payload->'data'->>'id' = ${id}`).toBe(1);
    expect(await count`select count(*)::text as n from refunds.outbox where type = 'sale.refunded' and payload->'data'->>'refund_request_id' = ${id}`).toBe(1);

    const retry = await call(s.baseUrl, "POST", `/v1/refund-requests/${id}/approve`, { key: s.testKey, body: { reviewed_by_actor: "ops" } });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({
      idempotent: true,
      refund_request: { id, status: "completed" },
      refund: { status: "completed", refunded_amount_cents: 10_000, is_full_refund: true },
    });
    const cancel = await call(s.baseUrl, "POST", `/v1/refund-requests/${id}/cancel`, { key: s.testKey, body: {} });
    expect([cancel.status, cancel.body["error_code"], cancel.body["state"]]).toEqual([409, "invalid_state_transition", "completed"]);
    expect(await creatorBalance(creator)).toBe(0);
    await stopAll();
  });
});
