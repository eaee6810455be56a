// Live card money through the gateway, with the card processor's API played by a loopback stand-in and its
// events signed by the official library: a paid live checkout (one sale, the fee booked, the creator credited,
// checkout.completed fanned out to a live endpoint), the same webhook 20 times at once (one movement), refused
// signatures (nothing done), an expired session, reports of the other environment or of another session (dropped,
// counted, nothing credited), a live wallet top-up, return URLs (https only; http on localhost in sandbox), live
// card refunds (pending → completed; a processor failure reversed in the ledger and visible on the refund and its
// request; sandbox never calls the processor), and disputes (hold on open, released when won, taken back with the
// fee when lost); refund and dispute events of the other environment move nothing.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import type { Service } from "@treasury/service-kit";
import { buildPayments, type PaymentsService } from "../../services/payments/src/service.ts";
import { buildWebhooks } from "../../services/webhooks/src/service.ts";
import { find } from "../../scripts/admin/find.ts";
import { checkoutSessionObject, processorEvent, rid, sendWebhook, signed, startProcessorStandIn, type ProcessorStandIn } from "./processor-stand-in.ts";
import { call, startStack, type Stack } from "./stack.ts";

const SECRET = `whsec_${randomUUID().replace(/-/g, "")}`;

let env: TestEnv;
let s: Stack;
let proc: ProcessorStandIn;
let payments: PaymentsService;
let webhooksSvc: Service;

beforeAll(async () => {
  env = await setupTestEnv();
  proc = await startProcessorStandIn();
  s = await startStack({ env, services: ["ledger", "refunds"] });
  payments = await buildPayments(
    env.env("payments", {
      STRIPE_SECRET_KEY: "sk_live_stand_in_secret_value",
      STRIPE_API_BASE: proc.url,
      STRIPE_WEBHOOK_SECRET: SECRET,
      STRIPE_TIMEOUT_MS: "2000",
      STRIPE_MAX_NETWORK_RETRIES: "1",
      PAYMENTS_PROCESSOR_POLL_MS: "100",
      PAYMENTS_RECONCILE_INTERVAL_MS: "200",
      PAYMENTS_RECONCILE_GRACE_MS: "500",
    }),
  );
  await payments.start();
  webhooksSvc = await buildWebhooks(env.env("webhooks", { WEBHOOK_TIMEOUT_MS: "300", WEBHOOK_POLL_INTERVAL_MS: "100" }));
  await webhooksSvc.start();
}, 120_000);
afterAll(async () => {
  await payments?.stop();
  await webhooksSvc?.stop();
  await s?.stop();
  await proc?.close();
  await env?.cleanup();
});

const api = (method: string, path: string, key: string, body?: unknown) => call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

async function n(query: Promise<{ n: string }[]>): Promise<number> {
  return Number((await query)[0]?.n ?? 0);
}
const txCount = (reference: string) => n(env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${reference}`);
const sessionStatus = async (id: string) =>
  (await env.adminSql<{ status: string }[]>`select status from payments.checkout_sessions where id = ${id}`)[0]?.status;

async function entriesOf(reference: string): Promise<Array<[string, string, number]>> {
  const rows = await env.adminSql<Array<{ account_type: string; entry_type: string; amount: string }>>`
    select a.account_type, e.entry_type, e.amount::text as amount
      from ledger.entries e join ledger.accounts a on a.id = e.account_id join ledger.transactions t on t.id = e.transaction_id
     where t.reference_id = ${reference} order by e.seq`;
  return rows.map((r) => [r.account_type, r.entry_type, Number(r.amount)]);
}

async function creatorWallet(pid: string, key = s.liveKey): Promise<{ balance: number; held_amount: number; available_balance: number }> {
  const r = await api("GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, key);
  return (r.body["wallets"] as { balance: number; held_amount: number; available_balance: number }[])[0]!;
}

async function participant(key = s.liveKey, split = 80): Promise<string> {
  const pid = rid("creator");
  expect((await api("POST", "/v1/participants", key, { participant_id: pid, default_split_percent: split })).status).toBe(201);
  return pid;
}

async function liveCheckout(pid: string, amount: number, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api("POST", "/v1/checkout-sessions", s.liveKey, { participant_id: pid, amount, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String((r.body["checkout_session"] as Record<string, unknown>)["id"]);
}

async function pay(id: string, amount: number, pi = rid("pi")): Promise<{ pi: string; event: Record<string, unknown> }> {
  const event = processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount, paymentIntent: pi }));
  const r = await sendWebhook(s.baseUrl, signed(event, SECRET));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await waitFor(async () => (await sessionStatus(id)) === "completed", { timeoutMs: 15_000 });
  return { pi, event };
}

/** How many processor reports were dropped for `reason` (processor_events_dropped_total). */
async function dropped(reason: string): Promise<number> {
  if (payments.metrics.getSingleMetric("processor_events_dropped_total") === undefined) return 0;
  const text = await payments.metrics.getSingleMetricAsString("processor_events_dropped_total");
  return Number(new RegExp(`^processor_events_dropped_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
}

/** Sends a signed event and waits until the worker has finished it; answers its recorded outcome. */
async function outcomeOf(event: Record<string, unknown>): Promise<string> {
  expect((await sendWebhook(s.baseUrl, signed(event, SECRET))).status).toBe(200);
  return waitFor(
    async () => {
      const [row] = await env.adminSql<{ status: string; outcome: string | null }[]>`
        select status, outcome from payments.processor_events where event_id = ${String(event["id"])}`;
      return row?.status === "processed" ? String(row.outcome) : false;
    },
    { timeoutMs: 15_000 },
  );
}

describe("live checkout completion", () => {
  it(
    "completes a paid live checkout once: one sale with the processor's fee, the creator credited, checkout.completed fanned out",
    { timeout: 60_000 },
    async () => {
      // Proves the whole path: signed event → recorded → worker → fee read from the processor → ledger sale → settle → event → webhooks.
      const endpoint = await api("POST", "/v1/webhooks", s.liveKey, {
        action: "create",
        url: "https://1.1.1.1/hooks",
        events: ["checkout.completed", "dispute.created", "dispute.closed"],
      });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
      const endpointId = String((endpoint.body["data"] as Record<string, unknown>)["id"]);
      proc.fee = 320;
      const pid = await participant();
      const id = await liveCheckout(pid, 10_000);
      const { pi } = await pay(id, 10_000);

      expect(await txCount(`checkout:${id}`)).toBe(1);
      expect(await entriesOf(`checkout:${id}`)).toEqual([
        ["platform_cash", "debit", 8_000],
        ["creator_earnings", "credit", 8_000],
        ["platform_cash", "debit", 2_000],
        ["platform_revenue", "credit", 2_000],
        ["processing_fees", "debit", 320],
        ["platform_cash", "credit", 320],
      ]);
      expect(await creatorWallet(pid)).toMatchObject({ balance: 8_000, available_balance: 8_000 });
      const [row] = await env.adminSql<{ processor_payment_intent: string; processor_charge: string; processing_fee: string }[]>`
      select processor_payment_intent, processor_charge, processing_fee::text from payments.checkout_sessions where id = ${id}`;
      expect(row).toEqual({ processor_payment_intent: pi, processor_charge: `ch_${pi}`, processing_fee: "320" });
      // The fee was read from the processor with the deployment's key, and no request sent the key anywhere else.
      const feeRead = proc.seen.find((r) => r.path === `/v1/payment_intents/${pi}`);
      expect(feeRead?.headers.authorization).toBe("Bearer sk_live_stand_in_secret_value");
      expect(feeRead?.form.get("expand[0]")).toBe("latest_charge.balance_transaction");

      const [ev] = await env.adminSql<{ payload: { data: Record<string, unknown> } }[]>`
      select payload from payments.outbox where type = 'checkout.completed' and payload->'data'->>'checkout_session_id' = ${id}`;
      expect(ev?.payload.data).toMatchObject({
        amount_cents: 10_000,
        creator_amount_cents: 8_000,
        platform_amount_cents: 1_680,
        processing_fee_cents: 320,
        sandbox: false,
        sale_reference: `checkout:${id}`,
      });
      await waitFor(
        async () => {
          const r = await api("POST", "/v1/webhooks", s.liveKey, { action: "deliveries", endpoint_id: endpointId, event_type: "checkout.completed" });
          return (r.body["data"] as unknown[]).length === 1;
        },
        { timeoutMs: 20_000 },
      );
    },
  );

  it("moves money once for the same webhook sent 20 times at once, and for a redelivery under another event id", { timeout: 60_000 }, async () => {
    // Proves de-duplication by the processor's event id (all answered 200) and the completion's idempotency across events.
    const pid = await participant();
    const id = await liveCheckout(pid, 5_000);
    const event = processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 5_000 }));
    const req = signed(event, SECRET);
    const answers = await Promise.all(Array.from({ length: 20 }, () => sendWebhook(s.baseUrl, req)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers.filter((a) => a.body["duplicate"] === false)).toHaveLength(1);
    await waitFor(async () => (await sessionStatus(id)) === "completed", { timeoutMs: 15_000 });
    const again = processorEvent("checkout.session.async_payment_succeeded", (event["data"] as { object: Record<string, unknown> }).object);
    await Promise.all(Array.from({ length: 5 }, () => sendWebhook(s.baseUrl, signed(again, SECRET))));
    await waitFor(
      async () =>
        (await n(
          env.adminSql<
            { n: string }[]
          >`select count(*)::text as n from payments.processor_events where event_id = ${String(again["id"])} and status = 'processed'`,
        )) === 1,
    );
    expect(await txCount(`checkout:${id}`)).toBe(1);
    expect(
      await n(
        env.adminSql<
          { n: string }[]
        >`select count(*)::text as n from payments.outbox where type = 'checkout.completed' and payload->'data'->>'checkout_session_id' = ${id}`,
      ),
    ).toBe(1);
    expect((await creatorWallet(pid)).balance).toBe(4_000);
  });

  it("charges the fee to the creator as processing_fee_paid_by says", { timeout: 30_000 }, async () => {
    // Proves the record-sale fee rule on a live checkout: split gives the creator floor(fee / 2).
    proc.fee = 301;
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000, { processing_fee_paid_by: "split" });
    await pay(id, 10_000);
    expect((await creatorWallet(pid)).balance).toBe(8_000 - 150);
    expect(await entriesOf(`checkout:${id}`)).toContainEqual(["processing_fees", "debit", 301]);
  });

  it("refuses a wrong secret, an old timestamp, a tampered body and a missing signature with 400, and does nothing", async () => {
    // Proves the signature is checked over the exact bytes received, with the tolerance, before anything is stored.
    const pid = await participant();
    const id = await liveCheckout(pid, 1_000);
    const event = processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 1_000 }));
    const good = signed(event, SECRET);
    const attempts = [
      signed(event, `whsec_${randomUUID().replace(/-/g, "")}`),
      signed(event, SECRET, Math.floor(Date.now() / 1000) - 600),
      { body: good.body.replace('"amount_total":1000', '"amount_total":1'), signature: good.signature },
      { body: `${good.body} `, signature: good.signature },
      { body: good.body },
    ];
    for (const a of attempts) {
      const r = await sendWebhook(s.baseUrl, a);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, error_code: "processor_signature_invalid" });
    }
    expect(await n(env.adminSql<{ n: string }[]>`select count(*)::text as n from payments.processor_events where event_id = ${String(event["id"])}`)).toBe(0);
    expect(await sessionStatus(id)).toBe("pending");
    // The same event, signed right, is accepted: the refusals above were the signature's.
    expect((await sendWebhook(s.baseUrl, good)).status).toBe(200);
  });

  it("acknowledges an event type it does not use, and fails an expired session with checkout.failed", { timeout: 30_000 }, async () => {
    // Proves unknown types are answered 200 and recorded as ignored, and checkout.session.expired → failed + checkout.failed.
    const other = processorEvent("customer.created", { id: rid("cus"), object: "customer" });
    const r = await sendWebhook(s.baseUrl, signed(other, SECRET));
    expect(r).toMatchObject({ status: 200, body: { received: true, handled: false } });
    expect((await env.adminSql<{ status: string }[]>`select status from payments.processor_events where event_id = ${String(other["id"])}`)[0]?.status).toBe(
      "ignored",
    );

    const pid = await participant();
    const id = await liveCheckout(pid, 2_000);
    await sendWebhook(
      s.baseUrl,
      signed(processorEvent("checkout.session.expired", checkoutSessionObject({ reference: id, amount: 2_000, status: "expired" })), SECRET),
    );
    await waitFor(async () => (await sessionStatus(id)) === "failed", { timeoutMs: 15_000 });
    expect(
      await n(
        env.adminSql<
          { n: string }[]
        >`select count(*)::text as n from payments.outbox where type = 'checkout.failed' and payload->'data'->>'checkout_session_id' = ${id}`,
      ),
    ).toBe(1);
    expect(await txCount(`checkout:${id}`)).toBe(0);
  });
});

describe("processor reports that do not match their session", () => {
  it("credits nothing for a test-mode event of a live checkout, counts it, and still completes from the live event", { timeout: 60_000 }, async () => {
    // Proves an event whose livemode differs from the session's environment is dropped: no sale, no credit, not failed.
    const pid = await participant();
    const id = await liveCheckout(pid, 3_000);
    const before = await dropped("livemode_mismatch");
    const outcomes = [
      await outcomeOf(processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 3_000, livemode: false }), false)),
      // A live envelope around a test-mode session says two things at once: dropped as well.
      await outcomeOf(processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 3_000, livemode: false }), true)),
      // An expiry from the other environment does not fail a session its buyer may be paying.
      await outcomeOf(
        processorEvent("checkout.session.expired", checkoutSessionObject({ reference: id, amount: 3_000, status: "expired", livemode: false }), false),
      ),
    ];
    expect(await sessionStatus(id)).toBe("pending");
    expect(await txCount(`checkout:${id}`)).toBe(0);
    expect((await creatorWallet(pid)).balance).toBe(0);
    expect(
      outcomes.every((o) => o.startsWith("dropped (livemode_mismatch)")),
      outcomes.join("; "),
    ).toBe(true);
    expect(await dropped("livemode_mismatch")).toBe(before + 3);

    // The live event of the same session completes it: the drops were the environment's.
    await pay(id, 3_000);
    expect(await txCount(`checkout:${id}`)).toBe(1);
    expect((await creatorWallet(pid)).balance).toBe(2_400);
  });
});

describe("sessions no processor event settled", () => {
  /**
   * The checkout's processor session, set up at the processor by `atProcessor` before its next check is made due
   * (the wait after creation is over), so the first check already sees it.
   */
  async function dueNow(id: string, atProcessor: (processorSession: string) => void = () => {}): Promise<string> {
    const [row] = await env.adminSql<{ session: string; check_at: Date | null }[]>`
      select payment_id as session, processor_check_at as check_at from payments.checkout_sessions where id = ${id}`;
    // Asked about only well after creation: the processor's events normally settle a session long before.
    expect(row?.check_at?.getTime()).toBeGreaterThan(Date.now() + 60_000);
    atProcessor(String(row?.session));
    await env.adminSql`update payments.checkout_sessions set processor_check_at = now() where id = ${id}`;
    return String(row?.session);
  }

  it("completes a paid live checkout whose event never came, from the processor's record, and a late event moves nothing", { timeout: 60_000 }, async () => {
    // Proves the backstop: a lost webhook does not lose a payment; the sale is booked once with the processor's fee.
    proc.fee = 77;
    const pid = await participant();
    const id = await liveCheckout(pid, 4_000);
    const pi = rid("pi");
    const processorSession = await dueNow(id, (cs) => proc.setSession(cs, { status: "complete", payment_status: "paid", payment_intent: pi }));
    await waitFor(async () => (await sessionStatus(id)) === "completed", { timeoutMs: 15_000 });
    expect(await txCount(`checkout:${id}`)).toBe(1);
    expect((await entriesOf(`checkout:${id}`)).filter(([type]) => type === "processing_fees")).toEqual([["processing_fees", "debit", 77]]);
    expect(await creatorWallet(pid)).toMatchObject({ balance: 3_200 });
    const read = proc.seen.find((r) => r.method === "GET" && r.path === `/v1/checkout/sessions/${processorSession}`);
    expect(read?.form.get("expand[0]")).toBe("payment_intent.latest_charge.balance_transaction");
    // On-call finds the checkout from either processor id the dashboard shows.
    for (const processorId of [processorSession, pi]) {
      const path = await find(env.adminSql, processorId);
      expect(
        path.rows["payments.checkout_sessions"]?.map((r) => r["id"]),
        processorId,
      ).toContain(id);
      expect(
        path.rows["ledger.transactions"]?.map((r) => r["reference_id"]),
        processorId,
      ).toContain(`checkout:${id}`);
    }
    // Counted for the alert that says the processor's webhooks are not arriving.
    const counted = await payments.metrics.getSingleMetricAsString("processor_session_checks_total");
    expect(Number(/^processor_session_checks_total\{[^}]*found="paid"[^}]*\} (\d+)$/m.exec(counted)?.[1]), counted).toBeGreaterThanOrEqual(1);

    const late = processorEvent(
      "checkout.session.completed",
      checkoutSessionObject({ processorSessionId: processorSession, reference: id, amount: 4_000, paymentIntent: pi }),
    );
    const [ev] = [late["id"] as string];
    expect((await sendWebhook(s.baseUrl, signed(late, SECRET))).status).toBe(200);
    await waitFor(
      async () => (await env.adminSql<{ status: string }[]>`select status from payments.processor_events where event_id = ${ev}`)[0]?.status === "processed",
      { timeoutMs: 15_000 },
    );
    expect(await txCount(`checkout:${id}`)).toBe(1);
    expect(await creatorWallet(pid)).toMatchObject({ balance: 3_200 });
  });

  it("credits a live wallet top-up whose event never came, once", { timeout: 60_000 }, async () => {
    // Proves the top-up side of the backstop: the processor's record of the paid session credits the wallet.
    const owner = rid("buyer");
    const wallet = await api("POST", "/v1/wallets", s.liveKey, { owner_id: owner, wallet_type: "consumer_credit" });
    const walletId = String((wallet.body["wallet"] as Record<string, unknown>)["id"]);
    const session = await api("POST", "/v1/wallet-sessions", s.liveKey, { wallet_id: walletId, permissions: ["view_balance", "top_up"] });
    const wals = String((session.body["wallet_session"] as Record<string, unknown>)["id"]);
    const form = new URLSearchParams({ amount: "12.00", nonce: randomUUID() });
    const posted = await fetch(`${s.altUrl}/v1/wallet/${wals}/topup`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect(posted.status).toBe(303);
    const processorSession = String(posted.headers.get("location")).split("/").at(-1)!;
    const [row] = await env.adminSql<{ id: string }[]>`select id from payments.wallet_topups where processor_session_id = ${processorSession}`;
    proc.fee = 40;
    proc.setSession(processorSession, { status: "complete", payment_status: "paid", payment_intent: rid("pi") });
    await env.adminSql`update payments.wallet_topups set processor_check_at = now() where id = ${row!.id}`;
    await waitFor(
      async () => (await env.adminSql<{ status: string }[]>`select status from payments.wallet_topups where id = ${row!.id}`)[0]?.status === "completed",
      { timeoutMs: 15_000 },
    );
    expect((await api("GET", `/v1/wallets/${walletId}`, s.liveKey)).body["wallet"]).toMatchObject({ balance: 1_200 });
    expect(await txCount(`wallet_topup:stripe:${processorSession}`)).toBe(1);
  });

  it("credits nothing when the processor's record of a live checkout is a test-mode session", { timeout: 60_000 }, async () => {
    // Proves the backstop compares the session's livemode too: a paid test-mode session read back completes nothing.
    const pid = await participant();
    const id = await liveCheckout(pid, 2_500);
    const before = await dropped("livemode_mismatch");
    const processorSession = await dueNow(id, (cs) =>
      proc.setSession(cs, { status: "complete", payment_status: "paid", payment_intent: rid("pi"), livemode: false }),
    );
    // Read back once: the check's next time moves past the session's expiry as it is claimed.
    await waitFor(async () => proc.seen.some((r) => r.method === "GET" && r.path === `/v1/checkout/sessions/${processorSession}`), { timeoutMs: 15_000 });
    await waitFor(async () => (await dropped("livemode_mismatch")) > before || (await sessionStatus(id)) !== "pending", { timeoutMs: 15_000 });
    expect(await sessionStatus(id)).toBe("pending");
    expect(await txCount(`checkout:${id}`)).toBe(0);
    expect((await creatorWallet(pid)).balance).toBe(0);
    expect(await dropped("livemode_mismatch")).toBe(before + 1);
  });

  it("leaves an open session for its next check after its expiry, and fails it once the processor says it expired", { timeout: 60_000 }, async () => {
    // Proves an unpaid session is neither failed early nor asked about at every pass.
    const pid = await participant();
    const id = await liveCheckout(pid, 1_500);
    const processorSession = await dueNow(id);
    const asked = () => proc.seen.filter((r) => r.method === "GET" && r.path === `/v1/checkout/sessions/${processorSession}`).length;
    await waitFor(async () => asked() === 1, { timeoutMs: 15_000 });
    const [row] = await env.adminSql<{ check_at: Date; expires_at: Date }[]>`
      select processor_check_at as check_at, expires_at from payments.checkout_sessions where id = ${id}`;
    expect(row?.check_at.getTime()).toBeGreaterThan(row?.expires_at.getTime() ?? Infinity);
    expect(await sessionStatus(id)).toBe("pending");

    proc.setSession(processorSession, { status: "expired" });
    await env.adminSql`update payments.checkout_sessions set processor_check_at = now() where id = ${id}`;
    await waitFor(async () => (await sessionStatus(id)) === "failed", { timeoutMs: 15_000 });
    expect(asked()).toBe(2);
    expect(await txCount(`checkout:${id}`)).toBe(0);
  });
});

describe("live wallet funding", () => {
  it("sends the buyer to the processor's checkout and credits the consumer wallet when it is paid", { timeout: 60_000 }, async () => {
    // Proves the hosted wallet page's live top-up: a processor checkout for the amount, its completion credits the wallet once.
    const owner = rid("buyer");
    const wallet = await api("POST", "/v1/wallets", s.liveKey, { owner_id: owner, wallet_type: "consumer_credit" });
    expect(wallet.status, JSON.stringify(wallet.body)).toBe(201);
    const walletId = String((wallet.body["wallet"] as Record<string, unknown>)["id"]);
    const session = await api("POST", "/v1/wallet-sessions", s.liveKey, { wallet_id: walletId, permissions: ["view_balance", "top_up"] });
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    const wals = String((session.body["wallet_session"] as Record<string, unknown>)["id"]);
    const page = await fetch(`${s.altUrl}/v1/wallet/${wals}`);
    expect(await page.text()).toContain("Continue to payment");
    const nonce = randomUUID();
    const form = new URLSearchParams({ amount: "25.00", nonce });
    const post = () =>
      fetch(`${s.altUrl}/v1/wallet/${wals}/topup`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form,
      });
    const first = await post();
    expect(first.status).toBe(303);
    const location = String(first.headers.get("location"));
    expect(location).toMatch(/^https:\/\/checkout\.stand-in\.test\/c\/pay\/cs_test_/);
    // A double submit of the same form goes to the same processor checkout.
    expect((await post()).headers.get("location")).toBe(location);
    const created = proc.seen.filter((r) => r.path === "/v1/checkout/sessions" && r.form.get("metadata[wallet_topup_id]") !== null);
    expect(created.length).toBeGreaterThanOrEqual(1);
    const topupId = String(created.at(-1)?.form.get("metadata[wallet_topup_id]"));
    expect(created.at(-1)?.form.get("line_items[0][price_data][unit_amount]")).toBe("2500");
    const processorSession = location.split("/").at(-1)!;

    proc.fee = 103;
    const paid = processorEvent(
      "checkout.session.completed",
      checkoutSessionObject({ processorSessionId: processorSession, reference: topupId, amount: 2_500, metadata: { wallet_topup_id: topupId } }),
    );
    await Promise.all([sendWebhook(s.baseUrl, signed(paid, SECRET)), sendWebhook(s.baseUrl, signed(paid, SECRET))]);
    await waitFor(
      async () => (await env.adminSql<{ status: string }[]>`select status from payments.wallet_topups where id = ${topupId}`)[0]?.status === "completed",
      { timeoutMs: 15_000 },
    );
    const after = await api("GET", `/v1/wallets/${walletId}`, s.liveKey);
    expect(after.body["wallet"]).toMatchObject({ balance: 2_500, available_balance: 2_500 });
    expect(await entriesOf(`wallet_topup:stripe:${processorSession}`)).toEqual([
      ["platform_cash", "debit", 2_500],
      ["consumer_credit", "credit", 2_500],
      ["processing_fees", "debit", 103],
      ["platform_cash", "credit", 103],
    ]);
  });
});

describe("live wallet funding: reports of another session", () => {
  it("credits nothing for a top-up event naming another processor session, another currency or test mode", { timeout: 60_000 }, async () => {
    // Proves a top-up completes only from its own processor session, in its currency and environment; then the right event credits it once.
    const owner = rid("buyer");
    const wallet = await api("POST", "/v1/wallets", s.liveKey, { owner_id: owner, wallet_type: "consumer_credit" });
    const walletId = String((wallet.body["wallet"] as Record<string, unknown>)["id"]);
    const session = await api("POST", "/v1/wallet-sessions", s.liveKey, { wallet_id: walletId, permissions: ["view_balance", "top_up"] });
    const wals = String((session.body["wallet_session"] as Record<string, unknown>)["id"]);
    const posted = await fetch(`${s.altUrl}/v1/wallet/${wals}/topup`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ amount: "30.00", nonce: randomUUID() }),
    });
    expect(posted.status).toBe(303);
    const processorSession = String(posted.headers.get("location")).split("/").at(-1)!;
    const [row] = await env.adminSql<{ id: string }[]>`select id from payments.wallet_topups where processor_session_id = ${processorSession}`;
    const topupId = row!.id;
    const report = (f: { processorSessionId: string; currency?: string; livemode?: boolean }) =>
      processorEvent(
        "checkout.session.completed",
        checkoutSessionObject({ ...f, reference: topupId, amount: 3_000, metadata: { wallet_topup_id: topupId } }),
        f.livemode ?? true,
      );
    const before = { session: await dropped("session_mismatch"), currency: await dropped("currency_mismatch"), livemode: await dropped("livemode_mismatch") };
    const otherSession = rid("cs_live");
    const outcomes = [
      await outcomeOf(report({ processorSessionId: otherSession })),
      await outcomeOf(report({ processorSessionId: processorSession, currency: "eur" })),
      await outcomeOf(report({ processorSessionId: processorSession, livemode: false })),
    ];
    const topup = async () =>
      (
        await env.adminSql<
          { status: string; processor_session_id: string }[]
        >`select status, processor_session_id from payments.wallet_topups where id = ${topupId}`
      )[0];
    expect(await topup()).toEqual({ status: "pending", processor_session_id: processorSession });
    expect((await api("GET", `/v1/wallets/${walletId}`, s.liveKey)).body["wallet"]).toMatchObject({ balance: 0 });
    expect((await txCount(`wallet_topup:stripe:${otherSession}`)) + (await txCount(`wallet_topup:stripe:${processorSession}`))).toBe(0);
    expect(outcomes.map((o) => /^dropped \((\w+)\)/.exec(o)?.[1] ?? o)).toEqual(["session_mismatch", "currency_mismatch", "livemode_mismatch"]);
    expect({
      session: await dropped("session_mismatch"),
      currency: await dropped("currency_mismatch"),
      livemode: await dropped("livemode_mismatch"),
    }).toEqual({ session: before.session + 1, currency: before.currency + 1, livemode: before.livemode + 1 });

    expect(await outcomeOf(report({ processorSessionId: processorSession }))).toMatch(/completed$/);
    expect((await api("GET", `/v1/wallets/${walletId}`, s.liveKey)).body["wallet"]).toMatchObject({ balance: 3_000 });
    expect(await txCount(`wallet_topup:stripe:${processorSession}`)).toBe(1);
  });
});

describe("return URLs", () => {
  it("refuses a script, http to another host, and in live http to localhost, with 400 validation_error; accepts https, and localhost in sandbox", async () => {
    // Proves success_url / cancel_url through the gateway, for checkouts and wallet sessions, with nothing stored for a refusal.
    const livePid = await participant();
    const testPid = await participant(s.testKey);
    const owner = rid("buyer");
    const refused: [string, string, string, string, string][] = [
      [s.liveKey, "/v1/checkout-sessions", "success_url", "javascript:alert(document.cookie)", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/checkout-sessions", "cancel_url", "http://shop.example/cancel", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/checkout-sessions", "success_url", "http://localhost:3000/ok", "must be an https URL in live mode"],
      [s.testKey, "/v1/checkout-sessions", "success_url", "data:text/html,<script>alert(1)</script>", "must be an https URL (http://localhost"],
      [s.testKey, "/v1/checkout-sessions", "cancel_url", "http://shop.example/cancel", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/wallet-sessions", "success_url", "javascript:alert(1)", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/wallet-sessions", "cancel_url", "http://127.0.0.1:8080/back", "must be an https URL in live mode"],
      [s.testKey, "/v1/wallet-sessions", "cancel_url", "http://shop.example/back", "must be an https URL (http://localhost"],
    ];
    const body = (key: string, path: string, extra: Record<string, string>) =>
      path === "/v1/wallet-sessions" ? { owner_id: owner, ...extra } : { participant_id: key === s.liveKey ? livePid : testPid, amount: 1_000, ...extra };
    for (const [key, path, field, url, message] of refused) {
      const r = await api("POST", path, key, body(key, path, { [field]: url }));
      expect([r.status, r.body["error_code"]], `${path} ${url}`).toEqual([400, "validation_error"]);
      expect(String(r.body["error"]), `${path} ${url}`).toContain(`${field}: ${message}`);
    }
    const stored = await n(env.adminSql<{ n: string }[]>`
      select ((select count(*) from payments.checkout_sessions where participant_id in (${livePid}, ${testPid}))
            + (select count(*) from payments.wallet_sessions where owner_id = ${owner}))::text as n`);
    expect(stored).toBe(0);

    const accepted: [string, string, Record<string, string>][] = [
      [s.liveKey, "/v1/checkout-sessions", { success_url: "https://shop.example/ok", cancel_url: "https://shop.example:8443/cancel" }],
      [s.testKey, "/v1/checkout-sessions", { success_url: "http://localhost:3000/ok", cancel_url: "http://127.0.0.1:8080/cancel" }],
      [s.liveKey, "/v1/wallet-sessions", { success_url: "https://shop.example/done" }],
      [s.testKey, "/v1/wallet-sessions", { success_url: "http://localhost/done", cancel_url: "http://127.0.0.1:5173/back" }],
    ];
    for (const [key, path, urls] of accepted) {
      const r = await api("POST", path, key, body(key, path, urls));
      expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(201);
    }
  });
});

describe("live card refunds", () => {
  it("keeps a card refund pending until the processor confirms it, then completes it", { timeout: 60_000 }, async () => {
    // Proves the processor is asked once per refund (our refund id as its idempotency key), pending → completed on refund.updated.
    proc.fee = 0;
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const r = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, amount: 4_000, reason: "returned" });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const refund = r.body["refund"] as Record<string, unknown> & { id: string; processor_refund_id: string };
    expect(refund).toMatchObject({ status: "pending", processor_status: "pending" });
    const asked = proc.seen.filter((q) => q.path === "/v1/refunds" && q.method === "POST" && q.headers["idempotency-key"] === refund.id);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.form.get("amount")).toBe("4000");
    expect(asked[0]?.form.get("payment_intent")).toBe(pi);
    // The ledger has already taken the refund back from the creator (80 % of 4,000).
    expect((await creatorWallet(pid)).balance).toBe(4_800);

    const done = processorEvent("refund.updated", { ...proc.refund(refund.processor_refund_id), status: "succeeded" });
    expect((await sendWebhook(s.baseUrl, signed(done, SECRET))).status).toBe(200);
    const completed = await waitFor(
      async () => {
        const g = await api("GET", `/v1/refunds/${refund.id}`, s.liveKey);
        return (g.body["refund"] as Record<string, unknown>)["status"] === "completed" ? g : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(completed.body["refund"]).toMatchObject({
      refunded_amount_cents: 4_000,
      processor_status: "succeeded",
      breakdown: { from_creator_cents: 3_200, from_platform_cents: 800 },
    });
    expect(
      await n(
        env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.outbox where type = 'refund.created' and payload->'data'->>'id' = ${refund.id}`,
      ),
    ).toBe(1);
    expect((await creatorWallet(pid)).balance).toBe(4_800);
  });

  it("reverses a card refund the processor fails, and shows the failure on the refund and its request", { timeout: 60_000 }, async () => {
    // Proves the compensation: refund.failed → the ledger gives the money back to both sides → refund and request failed.
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    await pay(id, 10_000);
    const rr = await api("POST", "/v1/refund-requests", s.liveKey, {
      sale_reference: `checkout:${id}`,
      customer_id: "buyer-1",
      reason: "never arrived",
      amount: 5_000,
    });
    expect(rr.status, JSON.stringify(rr.body)).toBe(201);
    const requestId = String((rr.body["refund_request"] as Record<string, unknown>)["id"]);
    const approved = await api("POST", `/v1/refund-requests/${requestId}/approve`, s.liveKey, { reviewed_by_actor: "ops" });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body["refund_request"]).toMatchObject({ status: "processing" });
    const refund = approved.body["refund"] as { id: string; processor_refund_id: string; status: string };
    expect(refund.status).toBe("pending");
    expect((await creatorWallet(pid)).balance).toBe(4_000);

    const failed = processorEvent("refund.failed", {
      ...proc.refund(refund.processor_refund_id),
      status: "failed",
      failure_reason: "expired_or_canceled_card",
    });
    expect((await sendWebhook(s.baseUrl, signed(failed, SECRET))).status).toBe(200);
    const got = await waitFor(
      async () => {
        const g = await api("GET", `/v1/refunds/${refund.id}`, s.liveKey);
        return (g.body["refund"] as Record<string, unknown>)["status"] === "failed" ? g : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(got.body["refund"]).toMatchObject({
      failure_code: "processor_refund_failed",
      processor_status: "failed",
      reversal_transaction_id: expect.stringMatching(/^txn_/),
    });
    expect(String((got.body["refund"] as Record<string, unknown>)["failure_reason"])).toContain("expired_or_canceled_card");
    const request = await api("GET", `/v1/refund-requests/${requestId}`, s.liveKey);
    expect(request.body["refund_request"]).toMatchObject({ status: "failed" });
    // Both sides have their money back.
    expect((await creatorWallet(pid)).balance).toBe(8_000);
    expect(
      await n(
        env.adminSql<
          { n: string }[]
        >`select count(*)::text as n from refunds.outbox where type = 'refund_request.failed' and payload->'data'->>'id' = ${requestId}`,
      ),
    ).toBe(1);
  });

  it("never asks the processor for a sandbox refund", { timeout: 30_000 }, async () => {
    // Proves sandbox refunds complete at once without a single call to the processor.
    const before = proc.seen.filter((q) => q.path.startsWith("/v1/refunds")).length;
    const pid = await participant(s.testKey);
    const c = await api("POST", "/v1/checkout-sessions", s.testKey, { participant_id: pid, amount: 3_000 });
    const id = String((c.body["checkout_session"] as Record<string, unknown>)["id"]);
    expect((await api("POST", `/v1/sandbox/checkouts/${id}/complete`, s.testKey, {})).status).toBe(200);
    const r = await api("POST", "/v1/refunds", s.testKey, { original_sale_reference: `checkout:${id}`, reason: "test" });
    expect(r.status).toBe(201);
    expect(r.body["refund"]).toMatchObject({ status: "completed", processor_status: null, processor_refund_id: null });
    expect(proc.seen.filter((q) => q.path.startsWith("/v1/refunds")).length).toBe(before);
  });
});

describe("disputes", () => {
  const disputeObject = (f: { pi: string; amount: number; status: string; id?: string; fee?: number }) => ({
    id: f.id ?? rid("dp"),
    object: "dispute",
    amount: f.amount,
    currency: "usd",
    charge: `ch_${f.pi}`,
    payment_intent: f.pi,
    reason: "fraudulent",
    status: f.status,
    balance_transactions: f.fee === undefined ? [] : [{ id: rid("txn"), object: "balance_transaction", amount: -f.amount, fee: f.fee, type: "adjustment" }],
    livemode: true,
  });
  const disputeStatus = async (processorId: string) =>
    (
      await env.adminSql<
        { status: string; id: string; hold_id: string | null }[]
      >`select id, status, hold_id from payments.disputes where processor_dispute_id = ${processorId}`
    )[0];

  it("holds the creator's share when a dispute opens and, lost, takes the sale back from both sides with the dispute fee", { timeout: 60_000 }, async () => {
    // Proves charge.dispute.created → hold + dispute.created; charge.dispute.closed (lost) → released, refunded like a refund, fee booked, dispute.closed.
    proc.fee = 0;
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const opened = disputeObject({ pi, amount: 10_000, status: "needs_response", fee: 1_500 });
    expect((await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.created", opened), SECRET))).status).toBe(200);
    const d = await waitFor(async () => ((await disputeStatus(opened.id))?.status === "open" ? disputeStatus(opened.id) : false), { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 8_000, held_amount: 8_000, available_balance: 0 });
    const holds = await api("GET", `/v1/holds?participant_id=${pid}`, s.liveKey);
    expect(JSON.stringify(holds.body)).toContain(String(d?.hold_id));

    const closed = { ...opened, status: "lost" };
    expect((await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.closed", closed), SECRET))).status).toBe(200);
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "lost", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 0, held_amount: 0 });
    expect(await entriesOf(`dispute:${d?.id}`)).toEqual(
      expect.arrayContaining([
        ["creator_earnings", "debit", 8_000],
        ["platform_revenue", "debit", 2_000],
      ]),
    );
    expect(await entriesOf(`dispute_fee:${d?.id}`)).toEqual([
      ["processing_fees", "debit", 1_500],
      ["platform_cash", "credit", 1_500],
    ]);
    const events = await env.adminSql<{ type: string; payload: { data: Record<string, unknown> } }[]>`
      select type, payload from payments.outbox where type like 'dispute.%' and payload->'data'->>'id' = ${String(d?.id)} order by seq`;
    expect(events.map((e) => e.type)).toEqual(["dispute.created", "dispute.closed"]);
    expect(events[1]?.payload.data).toMatchObject({
      outcome: "lost",
      status: "lost",
      refund_amount_cents: 10_000,
      dispute_fee_cents: 1_500,
      sale_reference: `checkout:${id}`,
    });
    // The sale is fully taken back: nothing is left to refund.
    const refund = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, reason: "after dispute" });
    expect(refund.body["error_code"]).toBe("sale_already_fully_refunded");
  });

  it("moves nothing for a test-mode refund or dispute event of a live sale, and counts them", { timeout: 60_000 }, async () => {
    // Proves refund and dispute events are held to the environment of what they name, like the session events.
    proc.fee = 0;
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const r = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, amount: 2_000, reason: "returned" });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const refund = r.body["refund"] as { id: string; processor_refund_id: string };
    const before = await dropped("livemode_mismatch");
    const testRefund = processorEvent("refund.updated", { ...proc.refund(refund.processor_refund_id), status: "succeeded", livemode: false }, false);
    const opened = { ...disputeObject({ pi, amount: 10_000, status: "needs_response" }), livemode: false };
    const outcomes = [await outcomeOf(testRefund), await outcomeOf(processorEvent("charge.dispute.created", opened, false))];
    expect((await api("GET", `/v1/refunds/${refund.id}`, s.liveKey)).body["refund"]).toMatchObject({ status: "pending", processor_status: "pending" });
    expect(await disputeStatus(opened.id)).toBeUndefined();
    expect(await creatorWallet(pid)).toMatchObject({ balance: 8_000 - 1_600, held_amount: 0 });
    expect(
      outcomes.every((o) => o.startsWith("dropped (livemode_mismatch)")),
      outcomes.join("; "),
    ).toBe(true);
    expect(await dropped("livemode_mismatch")).toBe(before + 2);
  });

  it("releases the hold when the dispute is won, and moves nothing else", { timeout: 60_000 }, async () => {
    // Proves the won path: the creator's share becomes available again and no refund or fee is booked.
    const pid = await participant();
    const id = await liveCheckout(pid, 6_000);
    const { pi } = await pay(id, 6_000);
    const opened = disputeObject({ pi, amount: 3_000, status: "needs_response" });
    await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.created", opened), SECRET));
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "open", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 4_800, held_amount: 2_400 });
    await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.closed", { ...opened, status: "won" }), SECRET));
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "won", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 4_800, held_amount: 0, available_balance: 4_800 });
    const d = await disputeStatus(opened.id);
    expect(await txCount(`dispute:${d?.id}`)).toBe(1);
    expect(await txCount(`dispute_fee:${d?.id}`)).toBe(0);
  });
});
