// Proves what payments answers to the operator's `admin find` over NATS, on real PostgreSQL with the ledger as a
// real process: a checkout session with its disputes and its sale's ledger reference, the rows found by their own
// key (with the org they belong to), the lookups made only within the org that named an id, the card processor's
// ids, and the processor's events that name an id, shown without their payload. Payments has no operator command:
// its audit log stays empty.
import { randomBytes, randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_FANOUT_OPERATIONS, newId, newRequestId, rpcSubject, type FindEventsReply, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { allowRisk, freePort, setupTestEnv, spawnService, type SpawnedService, type TestEnv } from "@treasury/testing";
import { buildPayments, type PaymentsService } from "../service.ts";

let env: TestEnv;
let ledger: SpawnedService;
let payments: PaymentsService;
const org = `org_${randomBytes(6).toString("hex")}`;
const sandbox = { orgId: org, livemode: false };

beforeAll(async () => {
  env = await setupTestEnv();
  ledger = spawnService("ledger", env.env("ledger", { HEALTH_PORT: String(await freePort()) }));
  payments = await buildPayments(env.env("payments"), { log: pino({ level: "silent" }), risk: allowRisk });
  await payments.start();
  await ledger.ready;
}, 120_000);
afterAll(async () => {
  await payments?.stop();
  ledger?.kill("SIGTERM");
  await ledger?.exited;
  await env?.cleanup();
});

const op = async (service: string, operation: string, payload: unknown): Promise<Record<string, unknown>> => {
  const r: RpcReply = await rpcCall(await env.nats(), rpcSubject(env.prefix, service, operation), payload, { timeoutMs: 20_000 });
  if (!r.ok) throw new Error(`${service}.${operation}: ${r.error.code}: ${r.error.message}`);
  return r.body;
};
const api = (service: string, operation: string, body: unknown, params: Record<string, string> = {}) =>
  op(service, operation, {
    auth: { org_id: org, livemode: false, key_id: "key_test", scopes: null, request_id: newRequestId() },
    params,
    query: {},
    body,
    alt_base_url: "http://alt.test",
  });
const findRows = async (nodes: unknown[]): Promise<FindRowsReply> =>
  (await op("payments", ADMIN_FANOUT_OPERATIONS.findRows, { nodes, seed: true })) as unknown as FindRowsReply;
const tables = (reply: FindRowsReply) => reply.hits.map((h) => [h.table, h.follow]);

/** A sandbox checkout session for a new participant, completed through the ledger unless `complete` is false. */
async function checkout(complete: boolean): Promise<Record<string, unknown>> {
  const participant = `creator_${randomBytes(4).toString("hex")}`;
  await api("ledger", "createParticipant", { participant_id: participant, default_split_percent: 80 });
  const created = (await api("payments", "createCheckoutSession", { participant_id: participant, amount: 2_500 }))["checkout_session"] as { id: string };
  if (complete) await api("payments", "sandboxCompleteCheckout", {}, { checkout_id: created.id });
  const [row] = await env.adminSql`select * from payments.checkout_sessions where id = ${created.id}`;
  return row ?? {};
}

/** What the card processor's paths record, written as they leave it: a dispute, a card refund, a wallet top-up, a received event. */
async function processorRecords(session: Record<string, unknown>) {
  const ids = {
    dispute: newId("dsp"),
    processorDispute: `du_${randomBytes(8).toString("hex")}`,
    refund: newId("re"),
    processorRefund: `re_${randomBytes(8).toString("hex")}`,
    walletSession: newId("wals"),
    topup: newId("wtop"),
    topupIntent: `pi_${randomBytes(8).toString("hex")}`,
    event: `evt_${randomBytes(8).toString("hex")}`,
  };
  const sale = `checkout:${String(session["id"])}`;
  await env.adminSql`
    insert into payments.disputes (id, org_id, livemode, processor_dispute_id, checkout_session_id, sale_reference, participant_id, amount, status)
    values (${ids.dispute}, ${org}, false, ${ids.processorDispute}, ${String(session["id"])}, ${sale}, ${String(session["participant_id"])}, 2500, 'open')`;
  await env.adminSql`
    insert into payments.processor_refunds (org_id, livemode, refund_id, checkout_session_id, sale_reference, amount, processor_payment_intent, processor_refund_id, status)
    values (${org}, false, ${ids.refund}, ${String(session["id"])}, ${sale}, 500, 'pi_card', ${ids.processorRefund}, 'succeeded')`;
  await env.adminSql`
    insert into payments.wallet_sessions (id, org_id, livemode, wallet_id, wallet_type, permissions, status, request_hash, create_response, expires_at)
    values (${ids.walletSession}, ${org}, false, ${randomUUID()}, 'consumer_credit', '{top_up}', 'active', 'hash', '{}', now() + interval '1 hour')`;
  await env.adminSql`
    insert into payments.wallet_topups (id, org_id, livemode, wallet_session_id, wallet_id, amount, nonce, status, processor_session_id, processor_payment_intent)
    values (${ids.topup}, ${org}, false, ${ids.walletSession}, ${randomUUID()}, 1000, 'n1', 'pending', ${`cs_test_${randomBytes(8).toString("hex")}`}, ${ids.topupIntent})`;
  const payload = { id: ids.event, data: { object: { metadata: { checkout_session_id: String(session["id"]) }, card: { last4: "4242" } } } };
  await env.adminSql`
    insert into payments.processor_events (provider, event_id, type, livemode, payload, status, outcome, processed_at)
    values ('stripe', ${ids.event}, 'charge.dispute.created', false, ${env.adminSql.json(payload)}, 'processed', 'dispute opened', now())`;
  return ids;
}

/** A shared-wallet spend and its reversal, as the spend and reversal use cases record them. */
async function spendRecords() {
  const ids = { reference: `spend_${randomBytes(4).toString("hex")}`, transaction: newId("txn"), request: newRequestId() };
  await env.adminSql`
    insert into payments.shared_spends (org_id, livemode, reference_id, transaction_id, consumer_sub, consumer_wallet_id, creator_id, amount,
      creator_amount, platform_amount, creator_bps, status)
    values (${org}, false, ${ids.reference}, ${ids.transaction}, 'buyer_1', ${randomUUID()}, 'creator_1', 1000, 800, 200, 8000, 'reversed')`;
  await env.adminSql`
    insert into payments.shared_spend_reversals (org_id, livemode, sale_transaction_id, spend_reference_id, request_id, status)
    values (${org}, false, ${ids.transaction}, ${ids.reference}, ${ids.request}, 'reversed')`;
  return ids;
}

describe("admin find in payments", () => {
  it("answers a checkout session by its UUID with its disputes, its sale's ledger reference and its org", async () => {
    // Proves the session (without its request hash and first answer), the dispute, and the nodes other services answer.
    const session = await checkout(true);
    const { dispute } = await processorRecords(session);
    const id = String(session["id"]);
    const found = await findRows([{ kind: "uuid", id: id.toUpperCase() }]);
    expect(tables(found)).toEqual([
      ["payments.checkout_sessions", true],
      ["payments.disputes", true],
    ]);
    expect(found.hits[0]?.row).toMatchObject({ id, status: "completed", amount: 2_500, sale_transaction_id: session["sale_transaction_id"] });
    expect(found.hits[0]?.row).not.toHaveProperty("request_hash");
    expect(found.hits[0]?.row).not.toHaveProperty("create_response");
    expect(found.hits[1]?.row).toMatchObject({ id: dispute, checkout_session_id: id });
    expect(found.nodes).toEqual([
      { kind: "ledger_reference", id: `checkout_sale|${String(session["ledger_reference"])}`, scope: sandbox },
      { kind: "uuid", id, scope: sandbox },
    ]);
    // A session not completing yet has no reference recorded: its sale would be posted under `checkout:<id>`.
    const pending = await checkout(false);
    expect(pending["ledger_reference"]).toBeNull();
    const scoped = await findRows([{ kind: "uuid", id: String(pending["id"]), scope: sandbox }]);
    expect(scoped.nodes).toEqual([{ kind: "ledger_reference", id: `checkout_sale|checkout:${String(pending["id"])}`, scope: sandbox }]);
    expect(await findRows([{ kind: "uuid", id: randomUUID() }])).toEqual({ hits: [], nodes: [] });
  });

  it("answers disputes, wallet sessions and top-ups by their own id, whatever the org asked with", async () => {
    // Proves the lookups by key, the wallet session without its request hash, and the ids returned with their org.
    const ids = await processorRecords(await checkout(false));
    const found = await findRows([
      { kind: "dispute", id: ids.dispute },
      { kind: "wallet_session", id: ids.walletSession, scope: { orgId: "org_other" } },
      { kind: "wallet_topup", id: ids.topup },
    ]);
    expect(found.hits.map((h) => [h.table, h.row["id"], h.follow])).toEqual([
      ["payments.disputes", ids.dispute, true],
      ["payments.wallet_sessions", ids.walletSession, true],
      ["payments.wallet_topups", ids.topup, true],
    ]);
    expect(found.hits[1]?.row).not.toHaveProperty("request_hash");
    expect(found.hits[1]?.row).not.toHaveProperty("create_response");
    expect(found.nodes).toEqual([
      { kind: "dispute", id: ids.dispute, scope: sandbox },
      { kind: "wallet_topup", id: ids.topup, scope: sandbox },
    ]);
  });

  it("looks up a transaction's spend and a refund's card refund only within the org and environment that named them", async () => {
    // Proves the scoped lookups (nothing for an unscoped id, another org or the other environment) and the request's reversal.
    const spend = await spendRecords();
    const { refund } = await processorRecords(await checkout(false));
    const nodes = (scope?: object) => [
      { kind: "transaction", id: spend.transaction, ...(scope === undefined ? {} : { scope }) },
      { kind: "refund", id: refund, ...(scope === undefined ? {} : { scope }) },
    ];
    const found = await findRows(nodes(sandbox));
    expect(found.hits.map((h) => [h.table, h.follow])).toEqual([
      ["payments.shared_spends", true],
      ["payments.processor_refunds", true],
    ]);
    expect(found.hits[0]?.row).toMatchObject({ transaction_id: spend.transaction, amount: 1_000 });
    expect(found.hits[1]?.row).toMatchObject({ refund_id: refund, amount: 500 });
    expect(tables(await findRows(nodes({ orgId: org })))).toHaveLength(2);
    for (const scope of [undefined, { orgId: org, livemode: true }, { orgId: "org_other" }])
      expect(await findRows(nodes(scope))).toEqual({ hits: [], nodes: [] });
    const reversal = await findRows([{ kind: "request", id: spend.request }]);
    expect(reversal.hits.map((h) => [h.table, h.row["sale_transaction_id"], h.follow])).toEqual([["payments.shared_spend_reversals", spend.transaction, true]]);
  });

  it("finds the rows holding a card processor's id", async () => {
    // Proves the payment, top-up, refund, dispute and event lookups by the processor's ids.
    const session = await checkout(true);
    const ids = await processorRecords(session);
    const found = await findRows(
      [String(session["payment_id"]), ids.topupIntent, ids.processorRefund, ids.processorDispute, ids.event].map((id) => ({ kind: "processor", id })),
    );
    expect(found.hits.map((h) => [h.table, h.follow])).toEqual([
      ["payments.checkout_sessions", true],
      ["payments.wallet_topups", true],
      ["payments.processor_refunds", true],
      ["payments.disputes", true],
      ["payments.processor_events", true],
    ]);
    expect(found.hits.map((h) => h.row["id"] ?? h.row["refund_id"] ?? h.row["event_id"])).toEqual([
      session["id"],
      ids.topup,
      ids.refund,
      ids.dispute,
      ids.event,
    ]);
  });

  it("names the processor's events whose payload holds an id, without the payload", async () => {
    // Proves the mentions answered with the outbox search: the event's handling, not the buyer's card details.
    const session = await checkout(true);
    const { event } = await processorRecords(session);
    const [completed] = await env.adminSql<{ id: string }[]>`select id from payments.outbox where payload::text like ${`%${String(session["id"])}%`}`;
    const reply = (await op("payments", ADMIN_FANOUT_OPERATIONS.findEvents, {
      event_ids: [completed?.id],
      ids: [String(session["id"])],
      requests: [],
      consumed: [],
    })) as unknown as FindEventsReply;
    expect(reply.events.filter((e) => e.by_id).map((e) => e.row.type)).toEqual(["checkout.completed"]);
    expect(reply.hits).toEqual([
      {
        table: "payments.processor_events",
        follow: false,
        row: expect.objectContaining({ provider: "stripe", id: event, type: "charge.dispute.created", status: "processed", outcome: "dispute opened" }),
      },
    ]);
    expect(Object.keys(reply.hits[0]?.row ?? {}).sort()).toEqual(
      [
        "provider",
        "id",
        "type",
        "livemode",
        "status",
        "outcome",
        "attempts",
        "last_error",
        "next_attempt_at",
        "locked_until",
        "received_at",
        "processed_at",
      ].sort(),
    );
    expect(await op("payments", ADMIN_FANOUT_OPERATIONS.auditList, { limit: 10 })).toEqual({ entries: [] });
  });
});
