// Proves `admin find <id>` on a real flow through the gateway (a checkout completed with held funds, its receipt, a partial refund through a buyer's refund request, the hold released, a payout): from each id the flow handed out, the path holds the rows that id is linked to in every service, the ledger entries, the events with their webhook deliveries and consumers, the request and trace ids, and the audit rows; read-only, and exit 1 for an unknown id.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { buildPayouts, type PayoutsService } from "../../services/payouts/src/service.ts";
import { buildReceipts, type ReceiptsService } from "../../services/receipts/src/service.ts";
import { find, type AdminClient, type FindResult } from "@treasury/service-kit/operator-client";
import { admin, adminClient } from "./admin-run.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;

let s: Stack;
let receipts: ReceiptsService;
let payouts: PayoutsService;
let server: http.Server;
let client: AdminClient;
const received: string[] = [];

const api = (method: string, path: string, body?: unknown) => call(s.baseUrl, method, path, { key: s.testKey, ...(body === undefined ? {} : { body }) });

async function ok(method: string, path: string, body: unknown, status: number): Promise<Body> {
  const r = await api(method, path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

const cli = (...args: string[]) => admin(s.env, ...args);

/** The ids of the rows of `table` on the path. */
function idsIn(path: FindResult, table: string, column = "id"): string[] {
  return (path.rows[table] ?? []).map((r) => String(r[column]));
}
function eventTypes(path: FindResult): string[] {
  return path.events.map((e) => String(e["type"]));
}
function eventOf(path: FindResult, type: string): Body {
  const e = path.events.find((x) => x["type"] === type);
  if (e === undefined) throw new Error(`no ${type} event on the path of ${path.query}: ${eventTypes(path).join(", ")}`);
  return e;
}

/** What the flow handed out. */
const flow = {
  participant: "",
  checkout: "",
  checkoutRequest: "",
  sale: "",
  saleReference: "",
  hold: "",
  release: "",
  receipt: "",
  refundRequest: "",
  refund: "",
  refundTxn: "",
  approveRequest: "",
  payout: "",
  payoutTxn: "",
  wallet: "",
};

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments", "refunds", "webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  const lifted = { capacity: 1e9, refill_per_sec: 1e9 };
  await s.env
    .adminSql`update gateway.orgs set rate_limits = ${s.env.adminSql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${s.orgId}`;
  receipts = await buildReceipts(s.env.env("receipts", { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("find1") }));
  await receipts.start();
  payouts = await buildPayouts(s.env.env("payouts", { PII_KEYS: generateKeyRingEntry("find2") }));
  await payouts.start();
  client = await adminClient(s.env);
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push(String(req.headers["x-webhook-event"]));
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  await ok("POST", "/v1/webhooks", { action: "create", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }, 201);

  flow.participant = `find_creator_${Date.now().toString(36)}`;
  await ok("POST", "/v1/participants", { participant_id: flow.participant, display_name: "Find Me", default_split_percent: 80 }, 201);
  const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: flow.participant, amount: 10_000, hold_funds: true }, 201))[
    "checkout_session"
  ] as Body;
  flow.checkout = String(cs["id"]);
  const done = await ok("POST", `/v1/sandbox/checkouts/${flow.checkout}/complete`, { idempotency_key: `find-${flow.checkout}` }, 200);
  flow.checkoutRequest = String(done["request_id"]);
  const completed = done["checkout_session"] as Body;
  flow.sale = String(completed["sale_transaction_id"]);
  flow.saleReference = String(completed["sale_reference"]);
  flow.hold = String(completed["hold_id"]);
  flow.receipt = String((await ok("POST", "/v1/receipts/generate", { checkout_id: flow.checkout }, 201))["receipt_id"]);
  // The signed proof of the sale is made when first asked for.
  await ok("GET", `/v1/receipts/${flow.receipt}/proof`, undefined, 200);

  flow.refundRequest = String(
    (
      (await ok("POST", "/v1/refund-requests", { sale_reference: flow.saleReference, amount: 2_000, reason: "one item missing" }, 201))[
        "refund_request"
      ] as Body
    )["id"],
  );
  const approved = await ok("POST", `/v1/refund-requests/${flow.refundRequest}/approve`, { reviewed_by_actor: "support@shop" }, 200);
  flow.approveRequest = String(approved["request_id"]);
  const refund = approved["refund"] as Body;
  flow.refund = String(refund["id"]);
  flow.refundTxn = String(refund["transaction_id"]);

  flow.release = String(((await ok("POST", `/v1/holds/${flow.hold}/release`, {}, 200))["release"] as Body)["id"]);
  const payout = (await ok("POST", "/v1/payouts", { participant_id: flow.participant, amount: 1_500, reference_id: `find-po-${flow.participant}` }, 201))[
    "payout"
  ] as Body;
  flow.payout = String(payout["id"]);
  flow.payoutTxn = String(payout["transaction_id"]);
  flow.wallet = String(payout["wallet_id"]);

  // The flow's public events have reached the receiver, so their deliveries are settled.
  await waitFor(
    () =>
      ["checkout.completed", "hold.created", "hold.released", "refund.created", "sale.refunded", "refund_request.completed", "payout.executed"].every((t) =>
        received.includes(t),
      ),
    { timeoutMs: 30_000 },
  );
  await waitFor(async () => (await s.env.adminSql`select 1 from webhooks.deliveries where status <> 'delivered'`).length === 0, { timeoutMs: 30_000 });
  // The card processor's event naming this checkout, as payments records what it receives (its live path).
  const processorEvent = {
    id: "evt_1FindProcessor",
    type: "checkout.session.completed",
    data: { object: { id: "cs_test_find", payment_status: "paid", client_reference_id: flow.checkout, metadata: { checkout_session_id: flow.checkout } } },
  };
  await s.env.adminSql`
    insert into payments.processor_events (provider, event_id, type, livemode, payload, status, outcome, attempts, processed_at)
    values ('stripe', 'evt_1FindProcessor', 'checkout.session.completed', false, ${s.env.adminSql.json(processorEvent)}, 'processed', 'completed', 1, now())`;
  expect(
    (await cli("refunds", "set-policy", "--org", s.orgId, "--env", "test", "--shortfall", "refuse", "--reason", "find test", "--actor", "ops:find")).code,
  ).toBe(0);
}, 120_000);

afterAll(async () => {
  await client?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await payouts?.stop();
  await receipts?.stop();
  await s?.stop();
});

describe("admin find", () => {
  it("a checkout session id: the sale, its entries, hold, receipt, refunds and the events with their deliveries", async () => {
    // Proves the whole path from the checkout through the CLI as a child process, and that a participant's other money (the payout) is not pulled in.
    const r = await cli("find", flow.checkout);
    expect(r.code).toBe(0);
    const path = r.out as unknown as FindResult;
    expect(path).toMatchObject({ query: flow.checkout, kinds: ["uuid"], found: true, org_ids: [s.orgId], truncated: false });
    expect(idsIn(path, "payments.checkout_sessions")).toEqual([flow.checkout]);
    expect(idsIn(path, "ledger.transactions")).toEqual(expect.arrayContaining([flow.sale, flow.refundTxn]));
    expect(idsIn(path, "ledger.sales", "sale_reference")).toEqual([flow.saleReference]);
    expect(idsIn(path, "ledger.holds")).toEqual([flow.hold]);
    expect(idsIn(path, "receipts.receipts")).toEqual([flow.receipt]);
    expect(idsIn(path, "receipts.proofs", "transaction_id")).toEqual([flow.sale]);
    expect(idsIn(path, "refunds.refunds")).toEqual([flow.refund]);
    expect(idsIn(path, "refunds.refund_requests")).toEqual([flow.refundRequest]);
    expect(idsIn(path, "ledger.participants", "participant_id")).toEqual([flow.participant]);
    expect(idsIn(path, "gateway.orgs")).toEqual([s.orgId]);
    expect(path.rows["payouts.payouts"]).toBeUndefined();
    expect(path.rows["payments.processor_events"]).toEqual([
      expect.objectContaining({
        provider: "stripe",
        id: "evt_1FindProcessor",
        type: "checkout.session.completed",
        status: "processed",
        attempts: 1,
        last_error: null,
      }),
    ]);
    expect(path.rows["payments.processor_events"]?.[0]).not.toHaveProperty("payload");
    // The sale's entries balance and name the creator's wallet.
    const saleEntries = (path.rows["ledger.entries"] ?? []).filter((e) => e["transaction_id"] === flow.sale);
    const sum = (side: string) => saleEntries.filter((e) => e["entry_type"] === side).reduce((a, e) => a + Number(e["amount"]), 0);
    expect(sum("debit")).toBe(10_000);
    expect(sum("credit")).toBe(10_000);
    expect(saleEntries.some((e) => e["account_type"] === "creator_earnings" && e["participant_id"] === flow.participant)).toBe(true);
    // Secrets and hashes are not printed.
    expect(JSON.stringify(path)).not.toMatch(/request_hash|create_response|whsec_/);

    expect(eventTypes(path)).toEqual(
      expect.arrayContaining([
        "checkout.completed",
        "hold.created",
        "hold.released",
        "ledger.transaction.posted",
        "refund_request.created",
        "refund_request.completed",
        "refund.created",
        "sale.refunded",
      ]),
    );
    const completed = eventOf(path, "checkout.completed");
    expect(completed).toMatchObject({
      service: "payments",
      request_id: flow.checkoutRequest,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      publish_attempts: 1,
    });
    expect(completed["published_at"]).not.toBeNull();
    const deliveries = completed["deliveries"] as Body[];
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ id: expect.stringMatching(/^whd_/), status: "delivered", attempts: 1, response_status: 200, last_error: null });
    expect((completed["consumed_by"] as Body[]).map((c) => c["service"])).toContain("webhooks");
    expect(path.request_ids).toEqual(expect.arrayContaining([flow.checkoutRequest, flow.approveRequest]));
    expect(path.trace_ids).toContain(completed["trace_id"]);
    // A group commit's ledger event shows only the transactions of this path.
    for (const e of path.events.filter((x) => x["type"] === "ledger.transaction.posted")) {
      const txns = ((e["data"] as Body)["transactions"] as Body[]).map((t) => String(t["transaction_id"]));
      expect(txns.length).toBeGreaterThan(0);
      for (const t of txns) expect(idsIn(path, "ledger.transactions")).toContain(t);
    }
  }, 60_000);

  it("the sale transaction, the hold and its release, and the receipt lead to the same checkout", async () => {
    // Proves the walk from ledger and receipts ids back to the checkout and its refunds.
    for (const id of [flow.sale, flow.hold, flow.release, flow.receipt]) {
      const path = await find(client, id);
      expect(path.found, id).toBe(true);
      expect(idsIn(path, "payments.checkout_sessions"), id).toEqual([flow.checkout]);
      expect(idsIn(path, "ledger.transactions"), id).toEqual(expect.arrayContaining([flow.sale]));
      expect(idsIn(path, "receipts.receipts"), id).toEqual([flow.receipt]);
      expect(idsIn(path, "refunds.refunds"), id).toEqual([flow.refund]);
    }
    const hold = await find(client, flow.release);
    expect(hold.kinds).toEqual(["release"]);
    expect(hold.rows["ledger.holds"]?.[0]).toMatchObject({ id: flow.hold, status: "released", release_id: flow.release });
    expect(eventTypes(hold)).toEqual(expect.arrayContaining(["hold.created", "hold.released"]));
  }, 60_000);

  it("the refund and the refund request: the refund's ledger transaction, the sale it refunds, the checkout, the refund events", async () => {
    // Proves refunds.* ids resolve across refunds, ledger and payments, with the request that approved it.
    for (const id of [flow.refund, flow.refundRequest, flow.refundTxn]) {
      const path = await find(client, id);
      expect(idsIn(path, "refunds.refunds"), id).toEqual([flow.refund]);
      expect(idsIn(path, "refunds.refund_requests"), id).toEqual([flow.refundRequest]);
      expect(idsIn(path, "ledger.transactions"), id).toEqual(expect.arrayContaining([flow.refundTxn, flow.sale]));
      expect(idsIn(path, "payments.checkout_sessions"), id).toEqual([flow.checkout]);
      expect(
        (path.rows["ledger.entries"] ?? []).some((e) => e["transaction_id"] === flow.refundTxn),
        id,
      ).toBe(true);
      expect(eventOf(path, "refund.created")).toMatchObject({ service: "refunds", request_id: flow.approveRequest });
      expect(eventTypes(path), id).toEqual(expect.arrayContaining(["sale.refunded", "refund_request.completed"]));
    }
  }, 60_000);

  it("the payout and its transaction: the payout, its ledger posting and wallet, its events and deliveries", async () => {
    // Proves payouts.* ids resolve to the ledger and the webhook deliveries of payout events.
    for (const id of [flow.payout, flow.payoutTxn]) {
      const path = await find(client, id);
      expect(idsIn(path, "payouts.payouts"), id).toEqual([flow.payout]);
      expect(idsIn(path, "ledger.transactions"), id).toEqual([flow.payoutTxn]);
      expect((path.rows["ledger.entries"] ?? []).filter((e) => e["transaction_id"] === flow.payoutTxn).length, id).toBeGreaterThanOrEqual(2);
      expect(idsIn(path, "ledger.accounts"), id).toEqual([flow.wallet]);
      expect(path.rows["payments.checkout_sessions"], id).toBeUndefined();
      const executed = eventOf(path, "payout.executed");
      expect((executed["deliveries"] as Body[])[0]).toMatchObject({ status: "delivered", attempts: 1 });
      expect(eventTypes(path), id).toContain("payout.created");
    }
  }, 60_000);

  it("an event id and a webhook delivery id: the event, its deliveries, and what its data names", async () => {
    // Proves evt_ and whd_ ids are walked through to the entity the event is about.
    const [delivery] = await s.env.adminSql<
      { id: string; event_id: string }[]
    >`select id, event_id from webhooks.deliveries where event_type = 'refund.created'`;
    expect(delivery).toBeDefined();
    for (const id of [delivery?.event_id ?? "", delivery?.id ?? ""]) {
      const path = await find(client, id);
      expect(eventOf(path, "refund.created")["id"], id).toBe(delivery?.event_id);
      expect(idsIn(path, "refunds.refunds"), id).toEqual([flow.refund]);
      expect(idsIn(path, "payments.checkout_sessions"), id).toEqual([flow.checkout]);
    }
    expect(idsIn(await find(client, delivery?.id ?? ""), "webhooks.deliveries")).toEqual([delivery?.id]);
  }, 60_000);

  it("a request id: the events it caused and, from them, the rest", async () => {
    // Proves request ids from the gateway lead through outbox headers (and a group commit's items) to the money.
    const path = await find(client, flow.checkoutRequest);
    expect(path.kinds).toEqual(["request"]);
    expect(eventOf(path, "checkout.completed")["request_id"]).toBe(flow.checkoutRequest);
    expect(eventOf(path, "ledger.transaction.posted")["request_id"]).toBe(flow.checkoutRequest);
    expect(idsIn(path, "payments.checkout_sessions")).toEqual([flow.checkout]);
    expect(idsIn(path, "ledger.transactions")).toEqual(expect.arrayContaining([flow.sale]));
    const approve = await find(client, flow.approveRequest);
    expect(idsIn(approve, "refunds.refunds")).toEqual([flow.refund]);
    expect(eventTypes(approve)).toEqual(expect.arrayContaining(["refund.created", "sale.refunded", "refund_request.completed"]));
  }, 60_000);

  it("a wallet, a participant and an org: themselves with their latest activity, and operator actions on them", async () => {
    // Proves hub ids list their own rows (wallet entries, payouts, keys) and the audit rows that name them.
    const wallet = await find(client, flow.wallet);
    expect(idsIn(wallet, "ledger.accounts")).toEqual([flow.wallet]);
    expect(idsIn(wallet, "ledger.participants", "participant_id")).toEqual([flow.participant]);
    expect((wallet.rows["ledger.entries"] ?? []).map((e) => e["transaction_id"])).toEqual(expect.arrayContaining([flow.sale, flow.payoutTxn]));

    const participant = await find(client, flow.participant);
    expect(participant.kinds).toEqual(["participant", "sale"]);
    expect(idsIn(participant, "ledger.participants", "participant_id")).toEqual([flow.participant]);
    expect(idsIn(participant, "ledger.accounts")).toEqual([flow.wallet]);
    expect(idsIn(participant, "payouts.payouts")).toEqual([flow.payout]);

    const org = await find(client, s.orgId);
    expect(idsIn(org, "gateway.orgs")).toEqual([s.orgId]);
    expect((org.rows["gateway.api_keys"] ?? []).length).toBe(2);
    expect(JSON.stringify(org.rows["gateway.api_keys"])).not.toContain("key_hash");
    expect(org.audit).toEqual([expect.objectContaining({ action: "refunds.set-policy", actor: "ops:find", reason: "find test", target_ids: [s.orgId] })]);
  }, 60_000);

  it("reads only, and answers found: false with exit 1 for an id nothing holds", async () => {
    // Proves find changes nothing (every service answers it with reads) and an unknown id is a clear miss, not an error.
    const counts = async () =>
      (
        await s.env
          .adminSql`select (select count(*) from ledger.transactions)::int as t, (select count(*) from refunds.audit_log)::int + (select count(*) from webhooks.audit_log)::int as a, (select count(*) from webhooks.deliveries)::int as d`
      )[0];
    const before = await counts();
    const missing = await cli("find", "txn_000000000000000000000000");
    expect(missing.code).toBe(1);
    expect(missing.out).toMatchObject({ query: "txn_000000000000000000000000", kinds: ["transaction"], found: false, rows: {}, events: [] });
    expect((await cli("find", "nobody-by-this-name")).out).toMatchObject({ kinds: ["participant", "sale"], found: false });
    expect((await cli("find")).code).toBe(1);
    expect(await counts()).toEqual(before);
  }, 60_000);

  it("an operator's webhook replay: sent again with the same webhook-id, recorded, and shown on the path", async () => {
    // Proves `admin webhooks replay` re-sends a delivered delivery, needs a reason, and its audit row appears in `find` of the payout.
    const [delivery] = await s.env.adminSql<{ id: string }[]>`select id from webhooks.deliveries where event_type = 'payout.executed'`;
    const id = delivery?.id ?? "";
    expect((await cli("webhooks", "replay", "--delivery", id)).code).toBe(1);
    const before = received.filter((t) => t === "payout.executed").length;
    const replay = await cli("webhooks", "replay", "--delivery", id, "--reason", "merchant lost it in a deploy (ticket 4711)", "--actor", "ops:find");
    expect(replay.code).toBe(0);
    expect(replay.out).toMatchObject({ replayed: true, delivery: { id, status: "retrying" } });
    await waitFor(() => received.filter((t) => t === "payout.executed").length === before + 1, { timeoutMs: 20_000 });
    await waitFor(
      async () => (await s.env.adminSql`select 1 from webhooks.deliveries where id = ${id} and status = 'delivered' and attempts = 2`).length === 1,
      { timeoutMs: 20_000 },
    );
    const path = await find(client, flow.payout);
    expect((eventOf(path, "payout.executed")["deliveries"] as Body[])[0]).toMatchObject({ id, status: "delivered", attempts: 2 });
    // The attempt without a reason is on record too, as failed.
    expect(path.audit.map((e) => `${e.action} ${e.outcome} ${e.reason ?? "-"}`)).toEqual([
      "webhooks.replay succeeded merchant lost it in a deploy (ticket 4711)",
      "webhooks.replay failed -",
    ]);
    expect(path.audit[0]).toMatchObject({ actor: "ops:find", org_id: s.orgId, livemode: false, target_ids: expect.arrayContaining([id]) });
    expect((await cli("webhooks", "replay", "--delivery", "whd_000000000000000000000000", "--reason", "x")).code).toBe(1);
  }, 60_000);
});
