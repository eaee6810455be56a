// Payments through the gateway: checkout creation in every mode, sandbox completion/failure, idempotency,
// isolation of live from sandbox, bad input, the reconciler, and the spec's typical flow steps 1–5.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { eventsStreamName, rpcSubject } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import type { PaymentsService } from "../../services/payments/src/service.ts";
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import { startProcessorStandIn, type ProcessorStandIn } from "./processor-stand-in.ts";
import { call, startStack, type Stack } from "./stack.ts";

let s: Stack;
let proc: ProcessorStandIn;
let api: (method: string, path: string, body?: unknown, key?: string) => Promise<{ status: number; body: Record<string, unknown> }>;

beforeAll(async () => {
  // Live hosted checkouts are the card processor's sessions: a loopback stand-in plays it, with a live-mode key
  // (a test-mode key refuses live checkouts).
  proc = await startProcessorStandIn();
  s = await startStack({
    services: ["ledger", "payments"],
    serviceEnv: { payments: { STRIPE_SECRET_KEY: "sk_live_checkout_stand_in", STRIPE_API_BASE: proc.url, STRIPE_MAX_NETWORK_RETRIES: "0" } },
  });
  // Generous write limits for this org: the file makes many treasury writes in a few seconds.
  await s.env
    .adminSql`update gateway.orgs set rate_limits = ${s.env.adminSql.json({ treasury_write: { capacity: 100_000, refill_per_sec: 100_000 }, write: { capacity: 100_000, refill_per_sec: 100_000 } })} where id = ${s.orgId}`;
  api = async (method, path, body, key = s.testKey) => {
    const r = await call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
    return { status: r.status, body: r.body };
  };
});
afterAll(async () => {
  await s?.stop();
  await proc?.close();
});

let seq = 0;
async function participant(opts: { split?: number; key?: string } = {}): Promise<string> {
  const id = `creator_${Date.now().toString(36)}_${seq++}`;
  const r = await api(
    "POST",
    "/v1/participants",
    { participant_id: id, display_name: `Creator <${id}>`, ...(opts.split !== undefined ? { default_split_percent: opts.split } : {}) },
    opts.key,
  );
  expect(r.status).toBe(201);
  return id;
}

async function creatorWallet(pid: string, key = s.testKey): Promise<Record<string, number>> {
  const r = await api("GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, undefined, key);
  expect(r.status).toBe(200);
  const w = (r.body["wallets"] as Record<string, number>[])[0];
  if (w === undefined) throw new Error(`no creator wallet for ${pid}`);
  return w;
}

type Session = Record<string, unknown> & { id: string; status: string; breakdown: Record<string, number> };
const session = (r: { body: Record<string, unknown> }) => r.body["checkout_session"] as Session;

async function ledgerTxCount(reference: string): Promise<number> {
  const [row] = await s.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${reference}`;
  return Number(row?.n ?? 0);
}
async function outboxCount(type: string, sessionId: string): Promise<number> {
  const [row] = await s.env.adminSql<{ n: string }[]>`
    select count(*)::text as n from payments.outbox where type = ${type} and payload->'data'->>'checkout_session_id' = ${sessionId}`;
  return Number(row?.n ?? 0);
}
async function tableCounts(): Promise<string> {
  const [row] = await s.env.adminSql<{ c: string }[]>`
    select concat_ws(',', (select count(*) from payments.checkout_sessions), (select count(*) from payments.wallet_sessions),
      (select count(*) from payments.shared_spends), (select count(*) from payments.shared_spend_reversals),
      (select count(*) from payments.outbox), (select count(*) from ledger.transactions)) as c`;
  return row?.c ?? "";
}

describe("typical flow (spec steps 1–5)", () => {
  // Proves participant → checkout → sandbox completion → checkout.completed on EVENTS → creator wallet and hold exact to the cent.
  it("records the split, emits the event once and reads back the wallet and hold", async () => {
    const pid = await participant({ split: 70.15 });
    const created = await api("POST", "/v1/checkout-sessions", {
      participant_id: pid,
      amount: 10_999,
      currency: "USD",
      product_id: "prod_1",
      product_name: "Course",
      sales_tax: 999,
      hold_funds: true,
      customer_email: "buyer@example.com",
      success_url: "https://shop.example/ok",
      metadata: { order: "o1" },
    });
    expect(created.status).toBe(201);
    const cs = session(created);
    expect(cs).toMatchObject({ mode: "session", status: "pending", amount: 10_999, currency: "USD", provider: "soledgic", sandbox: true });
    expect(cs["checkout_url"]).toBe(`${s.altUrl}/v1/checkout/${cs.id}`);
    const ttl = Date.parse(String(cs["expires_at"])) - Date.now();
    expect(ttl).toBeGreaterThan(59 * 60_000);
    expect(ttl).toBeLessThanOrEqual(60 * 60_000);
    // net 10000 × 70.15 % = 7015 to the creator, 2985 to the platform, 999 tax.
    expect(cs.breakdown).toEqual({
      gross_amount_cents: 10_999,
      sales_tax_amount_cents: 999,
      creator_amount_cents: 7015,
      platform_amount_cents: 2985,
      creator_percent: 70.15,
    });

    const done = await api("POST", `/v1/sandbox/checkouts/${cs.id}/complete`, { idempotency_key: "sbx-1" });
    expect(done.status).toBe(200);
    const completed = session(done);
    expect(completed).toMatchObject({ id: cs.id, status: "completed", sale_reference: `checkout:${cs.id}` });
    expect(completed["sale_transaction_id"]).toMatch(/^txn_/);
    expect(completed["hold_id"]).toMatch(/^hold_/);

    // checkout.completed: in the outbox once, then on the EVENTS stream.
    expect(await outboxCount("checkout.completed", cs.id)).toBe(1);
    const jsm = await jetstreamManager(await s.env.nats());
    const msg = await waitFor(
      async () => (await jsm.streams.getMessage(eventsStreamName(s.env.prefix), { last_by_subj: `${s.env.prefix}evt.checkout.completed` })) ?? false,
    );
    const event = msg.json<{ type: string; data: Record<string, unknown> }>();
    expect(event.type).toBe("checkout.completed");
    expect(event.data).toMatchObject({
      checkout_session_id: cs.id,
      sale_transaction_id: completed["sale_transaction_id"],
      sale_reference: `checkout:${cs.id}`,
      participant_id: pid,
      product_id: "prod_1",
      amount_cents: 10_999,
      currency: "USD",
      creator_amount_cents: 7015,
      platform_amount_cents: 2985,
      hold_id: completed["hold_id"],
      metadata: { order: "o1" },
      sandbox: true,
      sandbox_idempotency_key: "sbx-1",
    });
    expect(event.data["payment_id"]).toBe(completed["payment_id"]);

    const w = await creatorWallet(pid);
    expect(w).toMatchObject({ balance: 7015, held_amount: 7015, available_balance: 0 });
    const holds = await api("GET", `/v1/holds?participant_id=${pid}`);
    expect(holds.status).toBe(200);
    const rows = holds.body["holds"] as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: completed["hold_id"], amount: 7015, release_status: "held" });

    // Each step of the completion was timed once on the payments service's /metrics registry.
    const metrics = await s.services["payments"]!.metrics.getSingleMetricAsString("checkout_completion_step_seconds");
    for (const step of ["intent", "ledger_post", "settle"])
      expect(metrics).toMatch(new RegExp(`checkout_completion_step_seconds_count\\{[^}]*step="${step}"[^}]*\\} [1-9]`));
  });
});

describe("completion", () => {
  // Proves completing twice, then 50 times in parallel, moves money once, emits one event and answers the same session.
  it("is idempotent under repetition and concurrency", async () => {
    const pid = await participant();
    const cs = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 5000 }));
    const first = session(await api("POST", `/v1/sandbox/checkouts/${cs.id}/complete`, {}));
    const second = await api("POST", `/v1/sandbox/checkouts/${cs.id}/complete`, { idempotency_key: "other" });
    expect(second.status).toBe(200);
    expect(session(second)).toEqual(first);

    const cs2 = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 3333 }));
    const auth = { org_id: s.orgId, livemode: false, key_id: "k", scopes: null, request_id: "req_00000000000000000000000000000000" };
    const caller = await s.env.nats();
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        rpcCall(
          caller,
          rpcSubject(s.env.prefix, "payments", "sandboxCompleteCheckout"),
          { auth, params: { checkout_id: cs2.id }, query: {}, body: {}, alt_base_url: s.altUrl },
          { timeoutMs: 20_000 },
        ),
      ),
    );
    const txns = new Set(replies.map((r) => (r.ok ? (r.body["checkout_session"] as Session)["sale_transaction_id"] : `error:${r.error.code}`)));
    expect([...txns]).toHaveLength(1);
    expect([...txns][0]).toMatch(/^txn_/);
    expect(await ledgerTxCount(`checkout:${cs2.id}`)).toBe(1);
    expect(await outboxCount("checkout.completed", cs2.id)).toBe(1);
    expect((await creatorWallet(pid))["balance"]).toBe(4000 + 2666);
  });

  // Proves /fail on pending fails it with checkout.failed; completing/completed are refused; a failed session cannot complete.
  it("fails pending sessions only", async () => {
    const pid = await participant();
    const a = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 1000 }));
    const failed = await api("POST", `/v1/sandbox/checkouts/${a.id}/fail`, { reason: "buyer gave up" });
    expect(failed.status).toBe(200);
    expect(session(failed)).toMatchObject({ status: "failed", failure_reason: "buyer gave up" });
    expect(await outboxCount("checkout.failed", a.id)).toBe(1);
    expect((await api("POST", `/v1/sandbox/checkouts/${a.id}/fail`, {})).status).toBe(200);
    expect(await outboxCount("checkout.failed", a.id)).toBe(1);
    const completeFailed = await api("POST", `/v1/sandbox/checkouts/${a.id}/complete`, {});
    expect(completeFailed.status).toBe(409);
    expect(completeFailed.body["error_code"]).toBe("checkout_not_pending");
    expect(await ledgerTxCount(`checkout:${a.id}`)).toBe(0);

    const b = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 1000 }));
    await api("POST", `/v1/sandbox/checkouts/${b.id}/complete`, {});
    const failCompleted = await api("POST", `/v1/sandbox/checkouts/${b.id}/fail`, {});
    expect(failCompleted.status).toBe(409);
    expect(failCompleted.body["error_code"]).toBe("checkout_not_pending");

    const c = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 1000 }));
    await s.env.adminSql`update payments.checkout_sessions set status = 'completing', ledger_reference = ${`checkout:${c.id}`} where id = ${c.id}`;
    const failCompleting = await api("POST", `/v1/sandbox/checkouts/${c.id}/fail`, {});
    expect(failCompleting.status).toBe(409);
    expect(failCompleting.body["error_code"]).toBe("checkout_in_progress");
    // Undo the hand-made `completing`: left as it is, the payments service's reconciler would complete it a few
    // seconds later, in the middle of whichever test runs then (it did, in "bad input", on a loaded machine).
    await s.env.adminSql`update payments.checkout_sessions set status = 'pending', ledger_reference = null where id = ${c.id}`;
  });

  // Proves the reconciler finishes a session left in `completing` (intent recorded, nothing posted): money once, one event.
  it("reconciler re-drives stuck completions", async () => {
    const pid = await participant({ split: 50 });
    const cs = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 2001 }));
    await s.env.adminSql`
      update payments.checkout_sessions set status = 'completing', ledger_reference = ${`checkout:${cs.id}`}, payment_id = 'pay_x',
        updated_at = now() - interval '1 hour' where id = ${cs.id}`;
    const payments = s.services["payments"] as PaymentsService;
    expect(await payments.reconciler.runOnce()).toBeGreaterThanOrEqual(1);
    const [row] = await s.env.adminSql<{ status: string }[]>`select status from payments.checkout_sessions where id = ${cs.id}`;
    expect(row?.status).toBe("completed");
    await payments.reconciler.runOnce();
    expect(await ledgerTxCount(`checkout:${cs.id}`)).toBe(1);
    expect(await outboxCount("checkout.completed", cs.id)).toBe(1);
    expect((await creatorWallet(pid))["balance"]).toBe(1000);
  });
});

describe("expiry and the hosted page", () => {
  // Proves an expired session reads as expired, cannot be completed or paid, and its page shows that state; unknown ids are 404 pages.
  it("refuses expired sessions", async () => {
    const pid = await participant();
    const cs = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 700 }));
    const live = await fetch(String(cs["checkout_url"]));
    expect(live.status).toBe(200);
    expect(await live.text()).toContain("pay-form");
    await s.env.adminSql`update payments.checkout_sessions set expires_at = now() - interval '1 second' where id = ${cs.id}`;
    const done = await api("POST", `/v1/sandbox/checkouts/${cs.id}/complete`, {});
    expect(done.status).toBe(409);
    expect(done.body["error_code"]).toBe("checkout_expired");
    expect((done.body["checkout_session"] as Session).status).toBe("expired");
    const page = await fetch(String(cs["checkout_url"]));
    expect(page.status).toBe(410);
    const html = await page.text();
    expect(html).toContain("expired");
    expect(html).not.toContain("pay-form");
    const pay = await fetch(`${String(cs["checkout_url"])}/pay`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "card_number=4242424242424242",
      redirect: "manual",
    });
    expect(pay.status).toBe(410);
    expect(await ledgerTxCount(`checkout:${cs.id}`)).toBe(0);
    expect((await fetch(`${s.altUrl}/v1/checkout/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
  });

  // Proves the page's card form completes through the same use case as the API, and without success_url shows a success page.
  it("pays on the page without a success_url", async () => {
    const pid = await participant({ split: 50 });
    const cs = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 801 }));
    const pay = await fetch(`${String(cs["checkout_url"])}/pay`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "card_number=4242+4242+4242+4242&exp=12%2F34&cvc=123",
      redirect: "manual",
    });
    expect(pay.status).toBe(200);
    expect(await pay.text()).toContain("Payment complete");
    expect(await ledgerTxCount(`checkout:${cs.id}`)).toBe(1);
    expect(await outboxCount("checkout.completed", cs.id)).toBe(1);
    expect((await creatorWallet(pid))["balance"]).toBe(400);
    const again = await api("POST", `/v1/sandbox/checkouts/${cs.id}/complete`, {});
    expect(session(again)).toMatchObject({ status: "completed" });
    expect(await ledgerTxCount(`checkout:${cs.id}`)).toBe(1);
  });
});

describe("creation modes", () => {
  // Proves an idempotency_key replay answers 200 with the original body and idempotent: true; another body is 409.
  it("replays idempotency keys", async () => {
    const pid = await participant();
    const body = { participant_id: pid, amount: 1500, idempotency_key: `idem-${pid}` };
    const a = await api("POST", "/v1/checkout-sessions", body);
    expect(a.status).toBe(201);
    const b = await api("POST", "/v1/checkout-sessions", body);
    expect(b.status).toBe(200);
    expect(b.body["idempotent"]).toBe(true);
    expect(b.body["checkout_session"]).toEqual(a.body["checkout_session"]);
    const c = await api("POST", "/v1/checkout-sessions", { ...body, amount: 1501 });
    expect(c.status).toBe(409);
    expect(c.body["error_code"]).toBe("idempotency_conflict");
  });

  // Proves 10 concurrent creates with one key make one session and one sale: one 201, the rest 200 replays of it.
  it("concurrent duplicates of a direct payment move money once", async () => {
    const pid = await participant({ split: 50 });
    const body = { participant_id: pid, amount: 1234, payment_method_id: "pm_card_visa", idempotency_key: `race-${pid}` };
    const all = await Promise.all(Array.from({ length: 10 }, () => api("POST", "/v1/checkout-sessions", body)));
    expect(all.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(all.map((r) => session(r).id));
    expect(ids.size).toBe(1);
    expect(await ledgerTxCount(`checkout:${[...ids][0]}`)).toBe(1);
    expect((await creatorWallet(pid))["balance"]).toBe(617);
  });

  // Proves direct mode: pm_card_visa records the sale at once; pm_card_chargeDeclined is 422 card_declined with nothing written.
  it("direct card payments", async () => {
    const pid = await participant({ split: 90 });
    const ok = await api("POST", "/v1/checkout-sessions", {
      participant_id: pid,
      amount: 2000,
      payment_method_id: "pm_card_visa",
      idempotency_key: `d-${pid}`,
    });
    expect(ok.status).toBe(201);
    expect(session(ok)).toMatchObject({ mode: "direct", status: "completed", checkout_url: null, sale_reference: `checkout:${session(ok).id}` });
    expect(session(ok)["sale_transaction_id"]).toMatch(/^txn_/);
    expect(session(ok)["payment_id"]).toMatch(/^pay_/);
    expect((await creatorWallet(pid))["balance"]).toBe(1800);
    const replay = await api("POST", "/v1/checkout-sessions", {
      participant_id: pid,
      amount: 2000,
      payment_method_id: "pm_card_visa",
      idempotency_key: `d-${pid}`,
    });
    expect(replay.status).toBe(200);
    expect(replay.body["checkout_session"]).toEqual(ok.body["checkout_session"]);

    const before = await tableCounts();
    const declined = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 2000, payment_method_id: "pm_card_chargeDeclined" });
    expect(declined.status).toBe(422);
    expect(declined.body["error_code"]).toBe("card_declined");
    expect(await tableCounts()).toBe(before);
    expect((await creatorWallet(pid))["balance"]).toBe(1800);
  });

  // Proves wallet-funded purchases charge the buyer's consumer_credit wallet with the split in one transaction; insufficient funds move nothing.
  it("direct_funded_wallet", async () => {
    const pid = await participant({ split: 75 });
    const buyer = `buyer_${pid}`;
    const w = await api("POST", "/v1/wallets", { owner_id: buyer });
    expect(w.status).toBe(201);
    const walletId = String((w.body["wallet"] as Record<string, unknown>)["id"]);
    expect((await api("POST", `/v1/wallets/${walletId}/topups`, { amount: 5000, reference_id: `top-${buyer}` })).status).toBe(201);
    const paid = await api("POST", "/v1/checkout-sessions", {
      participant_id: pid,
      amount: 3000,
      purchase_mode: "direct_funded_wallet",
      customer_id: buyer,
      hold_funds: true,
    });
    expect(paid.status).toBe(201);
    expect(session(paid)).toMatchObject({
      mode: "direct_funded_wallet",
      status: "completed",
      breakdown: { creator_amount_cents: 2250, platform_amount_cents: 750 },
    });
    expect(session(paid)["hold_id"]).toMatch(/^hold_/);
    expect((await api("GET", `/v1/wallets/${walletId}`)).body["wallet"]).toMatchObject({ balance: 2000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 2250, held_amount: 2250 });

    const before = await tableCounts();
    const poorBody = { participant_id: pid, amount: 2001, purchase_mode: "direct_funded_wallet", buyer_user_id: buyer, idempotency_key: `poor-${pid}` };
    const poor = await api("POST", "/v1/checkout-sessions", poorBody);
    expect(poor.status).toBe(422);
    expect(poor.body["error_code"]).toBe("insufficient_balance");
    // The same key answers the same refusal, even once the buyer could pay.
    const replayed = await api("POST", "/v1/checkout-sessions", poorBody);
    expect(replayed.status).toBe(422);
    expect(replayed.body["error_code"]).toBe("insufficient_balance");
    expect((await api("GET", `/v1/wallets/${walletId}`)).body["wallet"]).toMatchObject({ balance: 2000 });
    expect((await creatorWallet(pid))["balance"]).toBe(2250);
    // The refused attempt is kept as a failed session (with checkout.failed); no ledger transaction was written.
    const [ledgerNow] = (await tableCounts()).split(",").slice(-1);
    expect(ledgerNow).toBe(before.split(",").slice(-1)[0]);

    const noWallet = await api("POST", "/v1/checkout-sessions", {
      participant_id: pid,
      amount: 100,
      purchase_mode: "direct_funded_wallet",
      customer_id: "nobody",
    });
    expect(noWallet.status).toBe(404);
    expect(noWallet.body["error_code"]).toBe("wallet_not_found");
  });

  // Proves provider/rail rules: stripe in sandbox is the processor's test mode; usdc is sandbox-only.
  it("providers and rails", async () => {
    const pid = await participant();
    // Sandbox stripe is the processor's test mode: this deployment's key is a live-mode one, so it is refused before
    // anything is stored (with a test-mode key it is a test-mode checkout: tests/e2e/payments-crash.test.ts).
    const stripe = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, sandbox_checkout_provider: "stripe" });
    expect([stripe.status, stripe.body["error_code"]]).toEqual([422, "provider_not_configured"]);
    const usdc = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, payment_rail: "usdc" });
    expect(usdc.status).toBe(201);
    expect(session(usdc)["payment_rail"]).toBe("usdc");

    const livePid = await participant({ key: s.liveKey });
    const liveUsdc = await api("POST", "/v1/checkout-sessions", { participant_id: livePid, amount: 100, payment_rail: "usdc" }, s.liveKey);
    expect(liveUsdc.status).toBe(422);
    expect(liveUsdc.body["error_code"]).toBe("rail_not_enabled");
    const missing = await api("POST", "/v1/checkout-sessions", { participant_id: "no_such_creator", amount: 100 });
    expect(missing.status).toBe(404);
    expect(missing.body["error_code"]).toBe("participant_not_found");
  });

  // Proves live and sandbox are isolated: sandbox completion with a live key is 403; a live session is invisible to test keys; sandbox balances never move.
  it("live checkouts never touch sandbox", async () => {
    const pid = `shared_${Date.now().toString(36)}`;
    expect((await api("POST", "/v1/participants", { participant_id: pid })).status).toBe(201);
    expect((await api("POST", "/v1/participants", { participant_id: pid }, s.liveKey)).status).toBe(201);
    const live = session(await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 4000 }, s.liveKey));
    // A live buyer pays on the processor's page: the sandbox's simulated card page is never a live checkout.
    expect(live).toMatchObject({ status: "pending", sandbox: false, provider: "stripe" });
    expect(String(live["checkout_url"])).toMatch(/^https:\/\/checkout\.stand-in\.test\/c\/pay\/cs_test_/);
    const simulated = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 4000, sandbox_checkout_provider: "soledgic" }, s.liveKey);
    expect([simulated.status, simulated.body["error_code"]]).toEqual([400, "validation_error"]);
    const refused = await api("POST", `/v1/sandbox/checkouts/${live.id}/complete`, {}, s.liveKey);
    expect(refused.status).toBe(403);
    expect(refused.body["error_code"]).toBe("sandbox_only");
    expect((await api("POST", `/v1/sandbox/checkouts/${live.id}/fail`, {}, s.liveKey)).status).toBe(403);
    const crossEnv = await api("POST", `/v1/sandbox/checkouts/${live.id}/complete`, {});
    expect(crossEnv.status).toBe(404);
    expect(crossEnv.body["error_code"]).toBe("checkout_session_not_found");
    const liveDirect = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 4000, payment_method_id: "pm_card_visa" }, s.liveKey);
    expect(liveDirect.status).toBe(422);
    expect(await ledgerTxCount(`checkout:${live.id}`)).toBe(0);
    expect((await creatorWallet(pid))["balance"]).toBe(0);
    expect((await creatorWallet(pid, s.liveKey))["balance"]).toBe(0);
  });
});

describe("bad input", () => {
  // Proves every payments operation answers bad input with the envelope and a precise error_code, writing nothing.
  it("rejects precisely and writes nothing", async () => {
    const pid = await participant();
    const before = await tableCounts();
    const cases: [string, string, unknown, number, string][] = [
      ["POST", "/v1/checkout-sessions", {}, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 10.5 }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: -1 }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100_000_000_001 }, 400, "amount_too_large"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, currency: "EUR" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, payment_rail: "wire" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, sandbox_checkout_provider: "paypal" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, success_url: "not a url" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, metadata: { a: 1 } }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, hold_funds: "yes" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, sales_tax: 101 }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, creator_percent: 50.123 }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, purchase_mode: "direct_funded_wallet" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, payment_method_id: "pm_card_unknown" }, 400, "validation_error"],
      ["POST", "/v1/checkout-sessions", { participant_id: pid, amount: 100, customer_email: "nope" }, 400, "validation_error"],
      ["POST", "/v1/sandbox/checkouts/not-a-uuid/complete", {}, 404, "checkout_session_not_found"],
      ["POST", "/v1/sandbox/checkouts/00000000-0000-4000-8000-000000000000/complete", {}, 404, "checkout_session_not_found"],
      ["POST", "/v1/sandbox/checkouts/00000000-0000-4000-8000-000000000000/fail", { reason: 5 }, 400, "validation_error"],
      ["POST", "/v1/wallet-sessions", {}, 400, "validation_error"],
      ["POST", "/v1/wallet-sessions", { permissions: ["fly"] }, 400, "validation_error"],
      ["POST", "/v1/wallet-sessions", { owner_id: "x", expires_in_minutes: 1441 }, 400, "validation_error"],
      ["POST", "/v1/wallet-sessions", { wallet_id: "00000000-0000-4000-8000-000000000000" }, 404, "wallet_not_found"],
      ["POST", "/v1/wallet-sessions", { owner_id: "nobody_here", owner_type: "creator" }, 404, "participant_not_found"],
      ["POST", "/v1/wallets/shared-spend", { consumer_sub: "s", amount: 0, reference_id: "r", creator_id: pid }, 400, "validation_error"],
      ["POST", "/v1/wallets/shared-spend", { consumer_sub: "s", amount: 100, reference_id: "r" }, 400, "validation_error"],
      ["POST", "/v1/wallets/shared-spend", { consumer_sub: "s", amount: 100, reference_id: "r", creator_id: "no_such_creator" }, 404, "participant_not_found"],
      ["POST", "/v1/wallets/shared-spend", { consumer_sub: "no_wallet_sub", amount: 100, reference_id: "r", creator_id: pid }, 404, "wallet_not_found"],
      ["POST", "/v1/wallets/shared-spend/reverse", {}, 400, "validation_error"],
      ["POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: "txn_nothing" }, 404, "transaction_not_found"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await api(method, path, body);
      expect({ path, body, status: r.status, code: r.body["error_code"] }).toEqual({ path, body, status, code });
      expect(r.body["success"]).toBe(false);
      expect(typeof r.body["error"]).toBe("string");
      expect(String(r.body["request_id"])).toMatch(/^req_/);
    }
    expect(await tableCounts()).toBe(before);
  });
});

describe("ledger invariants", () => {
  // Proves everything above left the ledger consistent: balanced transactions, wallets never negative, holds within balances.
  it("hold after every flow in this file", async () => {
    const report = await checkInvariants(s.env.adminSql);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
