// Proves the invoice's money steps recover on real PostgreSQL and NATS: a ledger that does not answer leaves the
// send's intent pending (504 to the caller, the invoice already sent), and the reconciler posts it under the same
// reference; a crash between the intent and the post is recovered the same way; every retry sends the ledger the
// identical request, so it is one movement. The ledger is a stand-in behind the service's port (the e2e suite
// runs the real one).
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { rpcSubject, type AuthContext, type PostRequestInput, type RpcReply } from "@treasury/contracts";
import { LedgerOutcomeUnknown, rpcCall, type LedgerPosted } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildInvoicing, type InvoicingService } from "./service.ts";
import type { LedgerClient } from "./usecases/ports.ts";

let env: TestEnv;
let nc: NatsConnection;
let svc: InvoicingService;
const posts: PostRequestInput[] = [];
let ledgerDown = false;
let crashAfterIntent = false;

/** A ledger that records what it is asked and answers one transaction per reference, or does not answer. */
const ledger: LedgerClient = {
  async post(req) {
    posts.push(req);
    if (ledgerDown) throw new LedgerOutcomeUnknown("service_timeout");
    const id = `txn_${req.kind}_${req.reference_id.replace(/[^A-Za-z0-9]/g, "")}`;
    return {
      transaction_id: id,
      kind: req.kind,
      reference_id: req.reference_id,
      amount: 0,
      created_at: "",
      wallets: {},
      holds_created: [],
      holds_released: [],
      extra: {},
      duplicate: false,
    } as LedgerPosted;
  },
  receivableBalances: async () => [],
  openBills: async () => [],
};

beforeAll(async () => {
  env = await setupTestEnv();
  nc = await env.nats();
  svc = await buildInvoicing(
    env.env("invoicing", { INVOICING_RECONCILE_INTERVAL_MS: "0", INVOICING_RECONCILE_GRACE_MS: "0", INVOICING_OVERDUE_INTERVAL_MS: "0" }),
    {
      ledger,
      afterIntent: async () => {
        if (crashAfterIntent) throw new Error("crash between the intent and the post");
      },
    },
  );
  await svc.start();
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  await env?.cleanup();
});

const auth = (orgId: string): AuthContext => ({
  org_id: orgId,
  livemode: false,
  key_id: "key_test",
  scopes: null,
  request_id: `req_${randomBytes(16).toString("hex")}`,
});

function call(op: string, a: AuthContext, req: { params?: Record<string, string>; body?: unknown } = {}): Promise<RpcReply> {
  const payload = { auth: a, params: req.params ?? {}, query: {}, body: req.body ?? {}, alt_base_url: "http://alt.test" };
  return rpcCall(nc, rpcSubject(env.prefix, "invoicing", op), payload, { timeoutMs: 20_000 });
}

async function draft(a: AuthContext): Promise<string> {
  const r = await call("createInvoice", a, { body: { customer_name: "Pending", line_items: [{ description: "p", unit_price_cents: 700 }] } });
  if (!r.ok) throw new Error(r.error.message);
  return String((r.body["invoice"] as Record<string, unknown>)["id"]);
}

async function invoice(a: AuthContext, id: string): Promise<Record<string, unknown>> {
  const r = await call("getInvoice", a, { params: { invoice_id: id } });
  if (!r.ok) throw new Error(r.error.message);
  return r.body["invoice"] as Record<string, unknown>;
}

describe("ledger intents", () => {
  it("a send the ledger did not answer is 504, stays pending, and the reconciler posts it once", async () => {
    const a = auth(`org_${randomBytes(6).toString("hex")}`);
    const id = await draft(a);
    ledgerDown = true;
    const sent = await call("sendInvoice", a, { params: { invoice_id: id } });
    ledgerDown = false;
    expect(sent.ok ? sent.status : sent.error.code).toBe("service_timeout");
    expect(await invoice(a, id)).toMatchObject({ status: "sent", transaction_id: null });
    expect(await svc.reconcile.runOnce()).toBeGreaterThanOrEqual(1);
    expect(await invoice(a, id)).toMatchObject({ status: "sent", transaction_id: `txn_invoice_invoice${id.replace("_", "")}send` });
    const mine = posts.filter((p) => p.reference_id === `invoice:${id}:send`);
    expect(mine).toHaveLength(2);
    expect(mine[1]).toEqual(mine[0]);
    // Settled once: another pass finds nothing of it.
    await svc.reconcile.runOnce();
    expect(posts.filter((p) => p.reference_id === `invoice:${id}:send`)).toHaveLength(2);
  });

  it("a crash between a payment's intent and its post is recovered by the reconciler, the amount already counted", async () => {
    const a = auth(`org_${randomBytes(6).toString("hex")}`);
    const id = await draft(a);
    expect((await call("sendInvoice", a, { params: { invoice_id: id } })).ok).toBe(true);
    crashAfterIntent = true;
    const paid = await call("recordInvoicePayment", a, { params: { invoice_id: id }, body: { amount: 700, reference_id: `crash-${id}` } });
    crashAfterIntent = false;
    expect(paid.ok).toBe(false);
    expect(await invoice(a, id)).toMatchObject({ status: "paid", amount_paid_cents: 700 });
    expect(posts.some((p) => p.reference_id === `crash-${id}`)).toBe(false);
    await svc.reconcile.runOnce();
    const after = await invoice(a, id);
    expect((after["payments"] as Record<string, unknown>[])[0]).toMatchObject({
      reference_id: `crash-${id}`,
      transaction_id: expect.stringMatching(/^txn_invoice_payment/),
    });
    expect(posts.filter((p) => p.reference_id === `crash-${id}`)).toHaveLength(1);
  });
});
