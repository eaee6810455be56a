// Live card checkouts through the gateway, with the card processor's API played by a loopback stand-in and its
// events signed by the official library (processor-live.ts): a paid live checkout (one sale, the fee booked, the
// creator credited, checkout.completed fanned out to a live endpoint), the same webhook 20 times at once (one
// movement), refused signatures (nothing done), an expired session, reports of the other environment (dropped,
// counted, nothing credited), and sessions no processor event settled (completed or failed from the processor's
// record).
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { waitFor, type TestEnv } from "@treasury/testing";
import type { PaymentsService } from "../../services/payments/src/service.ts";
import { find } from "@treasury/service-kit/operator-client";
import { adminClient } from "./admin-run.ts";
import { checkoutSessionObject, processorEvent, rid, sendWebhook, signed, type ProcessorStandIn } from "./processor-stand-in.ts";
import {
  api,
  n,
  txCount,
  sessionStatus,
  entriesOf,
  creatorWallet,
  participant,
  liveCheckout,
  pay,
  dropped,
  outcomeOf,
  SECRET,
  useLiveProcessor,
} from "./processor-live.ts";
import type { Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
let proc: ProcessorStandIn;
let payments: PaymentsService;
useLiveProcessor((live) => {
  ({ env, s, proc, payments } = live);
});

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
    const client = await adminClient(env);
    try {
      for (const processorId of [processorSession, pi]) {
        const path = await find(client, processorId);
        expect(
          path.rows["payments.checkout_sessions"]?.map((r) => r["id"]),
          processorId,
        ).toContain(id);
        expect(
          path.rows["ledger.transactions"]?.map((r) => r["reference_id"]),
          processorId,
        ).toContain(`checkout:${id}`);
      }
    } finally {
      await client.close();
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
