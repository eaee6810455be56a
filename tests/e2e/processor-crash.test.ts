// Payments as a real process killed with -9 while a processor event is in hand: after the event was recorded and
// answered but before any ledger post, and after the ledger post but before the settle step. A restarted process
// finishes each exactly once (one sale, one event), and no secret (API key, webhook secret, signature) reaches
// its logs.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv } from "@treasury/testing";
import { checkoutSessionObject, processorEvent, rid, sendWebhook, signed, startProcessorStandIn, type ProcessorStandIn } from "./processor-stand-in.ts";
import { call, startStack, type Stack } from "./stack.ts";

const SECRET = `whsec_${randomUUID().replace(/-/g, "")}`;
const API_KEY = `sk_live_${randomUUID().replace(/-/g, "")}`;

let env: TestEnv;
let s: Stack;
let proc: ProcessorStandIn;
const children: SpawnedService[] = [];

beforeAll(async () => {
  env = await setupTestEnv();
  proc = await startProcessorStandIn();
  s = await startStack({ env, services: ["ledger"], gatewayEnv: { RPC_TIMEOUT_MS: "3000" } });
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await s?.stop();
  await proc?.close();
  await env?.cleanup();
});

async function startPayments(extra: Record<string, string>, entry?: string): Promise<SpawnedService> {
  const vars = env.env("payments", {
    HEALTH_PORT: String(await freePort()),
    LOG_LEVEL: "info",
    STRIPE_SECRET_KEY: API_KEY,
    STRIPE_API_BASE: proc.url,
    STRIPE_WEBHOOK_SECRET: SECRET,
    PAYMENTS_PROCESSOR_POLL_MS: "100",
    ...extra,
  });
  const child = spawnService("payments", vars, entry === undefined ? {} : { entry });
  children.push(child);
  await child.ready;
  return child;
}

async function count(sql: TemplateStringsArray, ...args: string[]): Promise<number> {
  const rows = (await env.adminSql(sql, ...args)) as unknown as { n: string }[];
  return Number(rows[0]?.n ?? 0);
}

async function liveCheckout(amount: number): Promise<{ id: string; pid: string }> {
  const pid = rid("creator");
  expect((await call(s.baseUrl, "POST", "/v1/participants", { key: s.liveKey, body: { participant_id: pid, default_split_percent: 70 } })).status).toBe(201);
  const r = await call(s.baseUrl, "POST", "/v1/checkout-sessions", { key: s.liveKey, body: { participant_id: pid, amount } });
  expect(r.status).toBe(201);
  return { id: String((r.body["checkout_session"] as Record<string, unknown>)["id"]), pid };
}

function noSecrets(lines: string[], signature: string): void {
  const text = lines.join("\n");
  for (const secret of [API_KEY, SECRET, signature]) expect(text.includes(secret)).toBe(false);
}

describe("a processor event in hand when payments dies", () => {
  // Proves kill -9 after the event is recorded and answered, before the ledger post, loses nothing: the restart completes it once.
  it("is finished once by a restarted process", { timeout: 120_000 }, async () => {
    proc.fee = 250;
    const crashing = await startPayments({ PAYMENTS_PROCESSOR_LEASE_MS: "500" }, "tests/e2e/fixtures/payments-crash-before-processor-work.ts");
    const { id, pid } = await liveCheckout(10_000);
    const req = signed(processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 10_000 })), SECRET);
    expect((await sendWebhook(s.baseUrl, req)).status).toBe(200);
    await waitFor(() => crashing.output().some((l) => l.includes("PAYMENTS_PROCESSOR_CRASH_POINT_REACHED")), { timeoutMs: 15_000 });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${`checkout:${id}`}`).toBe(0);
    expect(await count`select count(*)::text as n from payments.processor_events where status = 'pending'`).toBe(1);
    crashing.kill("SIGKILL");
    expect((await crashing.exited).signal).toBe("SIGKILL");
    noSecrets(crashing.output(), req.signature);

    const restarted = await startPayments({});
    await waitFor(async () => (await count`select count(*)::text as n from payments.checkout_sessions where id = ${id} and status = 'completed'`) === 1, {
      timeoutMs: 20_000,
    });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${`checkout:${id}`}`).toBe(1);
    expect(
      await count`select count(*)::text as n from payments.outbox where type = 'checkout.completed' and payload->'data'->>'checkout_session_id' = ${id}`,
    ).toBe(1);
    const wallets = await call(s.baseUrl, "GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, { key: s.liveKey });
    expect((wallets.body["wallets"] as Record<string, unknown>[])[0]).toMatchObject({ balance: 7_000 });
    // A redelivery after the restart changes nothing.
    expect((await sendWebhook(s.baseUrl, req)).body).toMatchObject({ duplicate: true });
    noSecrets(restarted.output(), req.signature);
    restarted.kill("SIGKILL");
    await restarted.exited;
  });

  // Proves kill -9 between a processor completion's ledger post and its settle step: the reconciler settles it, money once.
  it("is settled once by the reconciler after a crash past the ledger post", { timeout: 120_000 }, async () => {
    const crashing = await startPayments({ PAYMENTS_RECONCILE_INTERVAL_MS: "600000" }, "tests/e2e/fixtures/payments-crash-after-post.ts");
    const { id } = await liveCheckout(4_000);
    const req = signed(processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 4_000 })), SECRET);
    expect((await sendWebhook(s.baseUrl, req)).status).toBe(200);
    await waitFor(() => crashing.output().some((l) => l.includes("PAYMENTS_CRASH_POINT_REACHED")), { timeoutMs: 15_000 });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${`checkout:${id}`}`).toBe(1);
    crashing.kill("SIGKILL");
    await crashing.exited;

    const restarted = await startPayments({ PAYMENTS_RECONCILE_INTERVAL_MS: "100", PAYMENTS_RECONCILE_GRACE_MS: "0", PAYMENTS_PROCESSOR_LEASE_MS: "500" });
    await waitFor(async () => (await count`select count(*)::text as n from payments.checkout_sessions where id = ${id} and status = 'completed'`) === 1, {
      timeoutMs: 20_000,
    });
    expect(await count`select count(*)::text as n from ledger.transactions where reference_id = ${`checkout:${id}`}`).toBe(1);
    expect(
      await count`select count(*)::text as n from payments.outbox where type = 'checkout.completed' and payload->'data'->>'checkout_session_id' = ${id}`,
    ).toBe(1);
    restarted.kill("SIGKILL");
    await restarted.exited;
  });
});
