// Proves the processor client and the processor paths of payments against a loopback HTTP server that answers in
// the processor's documented shapes (its error shape, a 5xx, a request that never answers): timeouts, retries with
// the same idempotency key, refusals told apart from unknown outcomes, and no secret in any log line; then, with
// payments on real PostgreSQL and NATS and the ledger as a real process, the signed-webhook intake (refusals store
// nothing), the card-refund request (a lost answer leaves it to be asked again under the same key), and live
// checkouts and top-ups refused with a test-mode key before anything is stored or asked.
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { pino } from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcSubject, schemas, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { allowRisk, freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv } from "@treasury/testing";
import { isLiveProcessorKey, stripeProvider } from "./adapters/providers.ts";
import { ProcessorRefused, ProcessorUnavailable, stripeClient } from "./adapters/stripe.ts";
import { buildPayments, type PaymentsService } from "./service.ts";
import { createCheckoutSession } from "./usecases/create-checkout.ts";
import { startLiveTopup } from "./usecases/wallet-topup.ts";
import { pruneProcessorEvents } from "./usecases/prune-processor-events.ts";

// A live-mode key: this deployment takes live card payments (a test-mode one refuses them, below).
const API_KEY = `sk_live_${randomBytes(12).toString("hex")}`;
const SECRET = `whsec_${randomBytes(18).toString("base64")}`;

type Reply = { status: number; body: unknown } | "hang";
interface Seen {
  method: string;
  path: string;
  form: URLSearchParams;
  headers: IncomingMessage["headers"];
}

/** A loopback processor: answers each request with the next queued reply for its path, else a default. */
async function loopback(defaults: (path: string, form: URLSearchParams) => Reply) {
  const seen: Seen[] = [];
  const queued = new Map<string, Reply[]>();
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://loopback");
      const form = new URLSearchParams(req.method === "GET" ? url.search : text);
      seen.push({ method: req.method ?? "", path: url.pathname, form, headers: req.headers });
      const reply = queued.get(url.pathname)?.shift() ?? defaults(url.pathname, form);
      if (reply === "hang") return void hanging.push(res);
      res.writeHead(reply.status, { "content-type": "application/json" });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    queue: (path: string, ...replies: Reply[]) => queued.set(path, [...(queued.get(path) ?? []), ...replies]),
    close: async () => {
      for (const h of hanging) h.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const stripeError = (status: number, type: string, message: string, code?: string) => ({
  status,
  body: { error: { type, message, ...(code !== undefined ? { code } : {}) } },
});
const refundBody = (form: URLSearchParams, status = "pending") => ({
  id: `re_${randomBytes(6).toString("hex")}`,
  object: "refund",
  amount: Number(form.get("amount")),
  currency: "usd",
  payment_intent: form.get("payment_intent"),
  status,
  metadata: {},
});

let server: Awaited<ReturnType<typeof loopback>>;
beforeAll(async () => {
  server = await loopback((path, form) => {
    if (path === "/v1/refunds") return { status: 200, body: refundBody(form) };
    if (path.startsWith("/v1/payment_intents/")) {
      const id = path.split("/").at(-1) ?? "";
      return {
        status: 200,
        body: {
          id,
          object: "payment_intent",
          latest_charge: { id: `ch_${id}`, object: "charge", balance_transaction: { id: `txn_${id}`, object: "balance_transaction", fee: 88 } },
        },
      };
    }
    return stripeError(404, "invalid_request_error", "Unrecognized request URL");
  });
});
afterAll(async () => {
  await server?.close();
});

describe("processor client", () => {
  const client = (over: { timeoutMs?: number; retries?: number } = {}) =>
    stripeClient({ secretKey: API_KEY, apiBase: server.url, timeoutMs: over.timeoutMs ?? 2_000, maxNetworkRetries: over.retries ?? 2 });
  const refundsSeen = (key: string) => server.seen.filter((r) => r.path === "/v1/refunds" && r.headers["idempotency-key"] === key);

  it("creates a refund with our refund id as the idempotency key and the bearer key, and reads a payment's fee", async () => {
    // Proves the request shape the processor documents and the mapping of its answer.
    const refundId = `re_${randomBytes(8).toString("hex")}`;
    const r = await client().createRefund({ paymentIntentId: "pi_1", amount: 700, refundId, metadata: { refund_id: refundId } });
    expect(r).toMatchObject({ status: "pending", paymentIntentId: "pi_1" });
    const [req] = refundsSeen(refundId);
    expect(req?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect([req?.form.get("amount"), req?.form.get("payment_intent"), req?.form.get("metadata[refund_id]")]).toEqual(["700", "pi_1", refundId]);
    expect(await client().paymentFacts("pi_fee")).toEqual({ paymentIntentId: "pi_fee", chargeId: "ch_pi_fee", fee: 88 });
  });

  it("retries a 5xx and a dropped answer with the same idempotency key", async () => {
    // Proves retries never make a second refund: every attempt carries the key of the first.
    const refundId = `re_${randomBytes(8).toString("hex")}`;
    server.queue("/v1/refunds", stripeError(500, "api_error", "Something went wrong"), stripeError(503, "api_error", "Try again"));
    const r = await client({ retries: 2 }).createRefund({ paymentIntentId: "pi_2", amount: 100, refundId, metadata: {} });
    expect(r.status).toBe("pending");
    expect(refundsSeen(refundId)).toHaveLength(3);
  });

  it("tells a refusal (4xx) from an unknown outcome (5xx exhausted, timeout, rejected credentials)", async () => {
    // Proves the two error kinds, each carrying the processor's code and never the key.
    server.queue("/v1/refunds", stripeError(400, "invalid_request_error", "Charge ch_x has already been refunded.", "charge_already_refunded"));
    const refused = await client()
      .createRefund({ paymentIntentId: "pi_3", amount: 100, refundId: `re_${randomUUID()}`, metadata: {} })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProcessorRefused);
    expect((refused as ProcessorRefused).processorCode).toBe("charge_already_refunded");

    server.queue("/v1/refunds", stripeError(500, "api_error", "down"));
    const down = await client({ retries: 0 })
      .createRefund({ paymentIntentId: "pi_3", amount: 100, refundId: `re_${randomUUID()}`, metadata: {} })
      .catch((e: unknown) => e);
    expect(down).toBeInstanceOf(ProcessorUnavailable);

    server.queue("/v1/refunds", "hang");
    const started = Date.now();
    const slow = await client({ timeoutMs: 300, retries: 0 })
      .createRefund({ paymentIntentId: "pi_3", amount: 100, refundId: `re_${randomUUID()}`, metadata: {} })
      .catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(ProcessorUnavailable);
    expect(Date.now() - started).toBeLessThan(5_000);

    server.queue("/v1/refunds", stripeError(401, "invalid_request_error", `Invalid API Key provided: ${API_KEY.slice(0, 12)}****`));
    const creds = await client()
      .createRefund({ paymentIntentId: "pi_3", amount: 100, refundId: `re_${randomUUID()}`, metadata: {} })
      .catch((e: unknown) => e);
    expect(creds).toBeInstanceOf(ProcessorUnavailable);
    expect(String((creds as Error).message)).not.toContain(API_KEY);

    server.queue("/v1/payment_intents/pi_unsettled", {
      status: 200,
      body: { id: "pi_unsettled", object: "payment_intent", latest_charge: { id: "ch_u", object: "charge", balance_transaction: null } },
    });
    expect(
      await client()
        .paymentFacts("pi_unsettled")
        .catch((e: unknown) => e),
    ).toBeInstanceOf(ProcessorUnavailable);
  });
});

describe("payments with the processor", () => {
  let env: TestEnv;
  let ledger: SpawnedService;
  let payments: PaymentsService;
  const logLines: string[] = [];
  const org = `org_${randomBytes(6).toString("hex")}`;
  const live = { org_id: org, livemode: true, key_id: "key_test", scopes: null };

  beforeAll(async () => {
    env = await setupTestEnv();
    ledger = spawnService("ledger", env.env("ledger", { HEALTH_PORT: String(await freePort()) }));
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (logLines.push(chunk.toString()), done()) });
    payments = await buildPayments(
      env.env("payments", {
        STRIPE_SECRET_KEY: API_KEY,
        STRIPE_API_BASE: server.url,
        STRIPE_WEBHOOK_SECRET: SECRET,
        STRIPE_TIMEOUT_MS: "300",
        STRIPE_MAX_NETWORK_RETRIES: "0",
        PAYMENTS_PROCESSOR_POLL_MS: "50",
      }),
      { log: pino({ level: "debug" }, sink), risk: allowRisk },
    );
    await payments.start();
    await ledger.ready;
  }, 120_000);
  afterAll(async () => {
    await payments?.stop();
    ledger?.kill("SIGTERM");
    await ledger?.exited;
    await env?.cleanup();
  });

  const op = async (service: string, operation: string, payload: unknown): Promise<RpcReply> =>
    rpcCall(await env.nats(), rpcSubject(env.prefix, service, operation), payload, { timeoutMs: 10_000 });
  const api = (service: string, operation: string, body: unknown) =>
    op(service, operation, {
      auth: { ...live, request_id: `req_${randomBytes(16).toString("hex")}` },
      params: {},
      query: {},
      body,
      alt_base_url: "http://alt.test",
    });
  const webhook = (body: string, signature: string | null) =>
    api("payments", "receiveStripeWebhook", { payload_base64: Buffer.from(body).toString("base64"), signature });
  const eventBody = (type: string, object: Record<string, unknown>) =>
    JSON.stringify({
      id: `evt_${randomBytes(8).toString("hex")}`,
      object: "event",
      type,
      livemode: true,
      created: Math.floor(Date.now() / 1000),
      data: { object },
    });

  it("stores nothing for a body whose signature does not verify, and records a verified one once", async () => {
    // Proves verification comes first (over the bytes as received) and the processor's event id de-duplicates.
    const body = eventBody("checkout.session.completed", {
      id: "cs_x",
      object: "checkout.session",
      payment_status: "paid",
      amount_total: 1,
      currency: "usd",
      client_reference_id: randomUUID(),
    });
    const wrong = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: "whsec_other" });
    const old = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET, timestamp: Math.floor(Date.now() / 1000) - 301 });
    for (const [b, sig] of [
      [body, wrong],
      [body, old],
      [`${body}\n`, Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET })],
      [body, null],
    ] as const) {
      const r = await webhook(b, sig);
      expect(r.ok ? "ok" : r.error.code).toBe("processor_signature_invalid");
    }
    const [before] = await env.adminSql<{ n: string }[]>`select count(*)::text as n from payments.processor_events`;
    expect(before?.n).toBe("0");
    const good = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET });
    const first = await webhook(body, good);
    const again = await webhook(body, good);
    expect([first.ok && first.body["duplicate"], again.ok && again.body["duplicate"]]).toEqual([false, true]);
    // No checkout session names that reference: the event is handled as nothing to do, not retried.
    await waitFor(async () => (await env.adminSql<{ status: string }[]>`select status from payments.processor_events`)[0]?.status === "processed");
  });

  it("asks the processor for a card refund, and after a lost answer asks again under the same key", async () => {
    // Proves internal.processorRefund: a sale not paid by card is answered null; a timeout is service_unavailable and the retry reuses the key.
    const notCard = await op("payments", schemas.PROCESSOR_REFUND_OPERATION, {
      org_id: org,
      livemode: true,
      refund_id: "re_none",
      sale_reference: "sale_1",
      amount: 100,
    });
    expect(notCard.ok && notCard.body).toEqual({ processor_refund: null });

    const pid = `creator_${randomBytes(4).toString("hex")}`;
    expect((await api("ledger", "createParticipant", { participant_id: pid, default_split_percent: 50 })).ok).toBe(true);
    // A live hosted checkout is the processor's session: cs_paid is the one the event below reports paid.
    server.queue("/v1/checkout/sessions", { status: 200, body: { id: "cs_paid", object: "checkout.session", url: "https://checkout.test/c/pay/cs_paid" } });
    const created = await api("payments", "createCheckoutSession", { participant_id: pid, amount: 2_000 });
    if (!created.ok) throw new Error(created.error.message);
    const id = String((created.body["checkout_session"] as Record<string, unknown>)["id"]);
    const paid = eventBody("checkout.session.completed", {
      id: "cs_paid",
      object: "checkout.session",
      payment_status: "paid",
      amount_total: 2_000,
      currency: "usd",
      client_reference_id: id,
      metadata: { checkout_session_id: id },
      payment_intent: "pi_card",
    });
    expect((await webhook(paid, Stripe.webhooks.generateTestHeaderString({ payload: paid, secret: SECRET }))).ok).toBe(true);
    await waitFor(
      async () => (await env.adminSql<{ status: string }[]>`select status from payments.checkout_sessions where id = ${id}`)[0]?.status === "completed",
    );

    const refundId = `re_${randomBytes(8).toString("hex")}`;
    const ask = () =>
      op("payments", schemas.PROCESSOR_REFUND_OPERATION, { org_id: org, livemode: true, refund_id: refundId, sale_reference: `checkout:${id}`, amount: 500 });
    server.queue("/v1/refunds", "hang");
    const lost = await ask();
    expect(lost.ok ? "ok" : lost.error.code).toBe("service_unavailable");
    expect((await env.adminSql<{ status: string }[]>`select status from payments.processor_refunds where refund_id = ${refundId}`)[0]?.status).toBe(
      "requested",
    );
    const answered = await ask();
    expect(answered.ok && answered.body["processor_refund"]).toMatchObject({ processor: "stripe", status: "pending" });
    const keys = server.seen.filter((r) => r.path === "/v1/refunds" && r.form.get("payment_intent") === "pi_card").map((r) => r.headers["idempotency-key"]);
    expect(keys).toEqual([refundId, refundId]);
    // Asked once more, the recorded answer is given without calling the processor again.
    await ask();
    expect(server.seen.filter((r) => r.path === "/v1/refunds" && r.form.get("payment_intent") === "pi_card")).toHaveLength(2);
  });

  it("deletes finished events past their retention, never a pending one, and a resend after that is recorded again", async () => {
    // Proves the table keeps one retention period of finished events: old processed and ignored rows go, recent
    // ones and pending ones (money may be behind them) stay.
    const days = (n: number) => new Date(Date.now() - n * 86_400_000);
    const rows: [string, string, Date | null][] = [
      ["evt_prune_old_processed", "processed", days(46)],
      ["evt_prune_old_ignored", "ignored", days(50)],
      ["evt_prune_recent", "processed", days(44)],
      ["evt_prune_pending", "pending", null],
    ];
    for (const [id, status, processedAt] of rows) {
      await env.adminSql`
        insert into payments.processor_events (provider, event_id, type, livemode, payload, status, processed_at, received_at)
        values ('stripe', ${id}, 'charge.succeeded', true, '{}'::jsonb, ${status}, ${processedAt}, ${days(60)})`;
    }
    // The pending row is held by a lease far in the future, so the running worker leaves it alone.
    await env.adminSql`update payments.processor_events set locked_until = now() + interval '1 hour' where event_id = 'evt_prune_pending'`;
    expect(await pruneProcessorEvents(payments.deps, 45)).toBe(2);
    const left = await env.adminSql<{ event_id: string }[]>`select event_id from payments.processor_events where event_id like 'evt_prune_%' order by event_id`;
    expect(left.map((r) => r.event_id)).toEqual(["evt_prune_pending", "evt_prune_recent"]);
    expect(await pruneProcessorEvents(payments.deps, 45)).toBe(0);

    const body = JSON.stringify({ id: "evt_prune_old_ignored", object: "event", type: "charge.succeeded", livemode: true, created: 1, data: { object: {} } });
    const resent = await webhook(body, Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET }));
    expect(resent.ok && resent.body["duplicate"]).toBe(false);
  });

  it("refuses a live checkout and a live top-up with a test-mode processor key, storing and asking nothing", async () => {
    // Proves a deployment whose key is a test-mode one (whose test cards anyone can pay with) never takes live money.
    for (const testKey of [`sk_test_${randomBytes(8).toString("hex")}`, `rk_test_${randomBytes(8).toString("hex")}`]) {
      const client = stripeClient({ secretKey: testKey, apiBase: server.url, timeoutMs: 300, maxNetworkRetries: 0 });
      const deps = {
        ...payments.deps,
        providers: { ...payments.deps.providers, stripe: stripeProvider(client, { liveAccount: isLiveProcessorKey(testKey) }) },
      };
      const asked = server.seen.length;
      const participant = `creator_${randomBytes(4).toString("hex")}`;
      const refused = await createCheckoutSession(
        deps,
        { orgId: org, livemode: true },
        { participant_id: participant, amount: 1_500 },
        "http://alt.test",
      ).catch((e: unknown) => e);
      expect((refused as { code?: string }).code, testKey).toBe("provider_not_configured");
      expect(String((refused as Error).message)).toContain("live-mode card processor key");
      const wals = `wals_${randomBytes(8).toString("hex")}`;
      const session = { id: wals, org_id: org, livemode: true, wallet_id: randomUUID() } as Parameters<typeof startLiveTopup>[1];
      const topup = await startLiveTopup(deps, session, 1_500, randomUUID(), "http://alt.test/v1/wallet/x").catch((e: unknown) => e);
      expect((topup as { code?: string }).code, testKey).toBe("provider_not_configured");
      const [stored] = await env.adminSql<{ n: string }[]>`
        select ((select count(*) from payments.checkout_sessions where participant_id = ${participant})
              + (select count(*) from payments.wallet_topups where wallet_session_id = ${wals}))::text as n`;
      expect(stored?.n).toBe("0");
      expect(server.seen.length).toBe(asked);
    }
  });

  it("writes no secret to its logs", () => {
    // Proves the API key, the webhook secret and signatures stay out of every log line written above.
    expect(logLines.length).toBeGreaterThan(0);
    const text = logLines.join("");
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("v1=");
  });
});
